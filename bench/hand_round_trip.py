"""A Hand tool round trip as the Mind makes it, for the benchmarks that time one.

The Mind's side runs in the benchmark's process: a store (SQLite file by default, through the
store's group-committing writer, default synchronous), the real HandLink servicer behind the
authenticating interceptor, the Authority and the Registry. The Hand is an SDK Hand with one
`echo` tool in a process of its own (this module run as a script), as in a deployment. A round
trip is one call of that tool through the remote tool the model would call: offer, the Hand's
reports, each committed before it is acknowledged, and the terminal the call waits for.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from mind.credentials import issue, store_authenticator
from mind.credentials.interceptor import AuthInterceptor
from mind.remote.execution import RemoteExecution
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.models import Conversation, Credential
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode, ToolContext
from tobe.config import RemoteSettings
from tobe.runtime.server import start_server

CONVERSATION = "p_bench"
TOKEN_VARIABLE = "TOBE_BENCH_HAND_TOKEN"
# "1" in the Hand's environment: it asks for nothing in its hello (neither result-as-acceptance
# nor batches, see hand.proto), as older Hands.
CLASSIC_VARIABLE = "TOBE_BENCH_HAND_CLASSIC"
WARM_UP = 0.5

RoundTrip = Callable[[], Awaitable[None]]


async def measure(round_trip: RoundTrip, in_flight: int, seconds: float) -> float:
    """Round trips per second with `in_flight` workers looping until the time is up."""
    deadline = time.perf_counter() + seconds
    done = 0

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await round_trip()
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return done / (time.perf_counter() - start)


async def measure_with_cpu(
    round_trip: RoundTrip, in_flight: int, seconds: float
) -> tuple[float, float]:
    """Round trips per second, and this process's CPU milliseconds per round trip."""
    started = time.process_time()
    rate = await measure(round_trip, in_flight, seconds)
    return rate, (time.process_time() - started) * 1000 / (rate * seconds)


@contextlib.contextmanager
def script(path: str, *arguments: str, env: dict[str, str] | None = None) -> Iterator[None]:
    """A Python script run as a peer process, killed on the way out."""
    process = subprocess.Popen(
        [sys.executable, path, *arguments], env={**os.environ, **(env or {})}
    )
    try:
        yield
    finally:
        process.kill()
        process.wait()


@contextlib.asynccontextmanager
async def hand_round_trip(
    url: str, arguments: dict[str, Any], *, classic: bool = False
) -> AsyncIterator[RoundTrip]:
    """A Mind on the store at `url` with an SDK Hand attached: yields one echo round trip.
    `classic` runs a Hand that asks for nothing in its hello, as older Hands."""
    upgrade(url)
    database = Database.open(url)

    def prepare(tx: WriteTx) -> tuple[Credential, str]:
        tx.session.add(Conversation(key=CONVERSATION, owner="bench"))
        return issue(tx.session, kind="hand", principal="bench")

    _, token = await database.write(prepare)
    remote = RemoteExecution.build(database, RemoteSettings(), audience=lambda _key: ["bench"])
    server = await start_server(
        [remote.service_spec()],
        ["127.0.0.1:0"],
        interceptors=[AuthInterceptor(store_authenticator(database))],
    )
    target = f"127.0.0.1:{server.bound['127.0.0.1:0']}"
    env = {TOKEN_VARIABLE: token, CLASSIC_VARIABLE: "1" if classic else "0"}
    try:
        with script(__file__, target, env=env):
            while not remote.tools.tools_for(CONVERSATION):
                await asyncio.sleep(0.05)
            (tool,) = remote.tools.tools_for(CONVERSATION)
            context = ToolContext(
                CONVERSATION, "run", "call", "bench", DetailMode.SUMMARY, lambda _m, _f: None
            )

            async def round_trip() -> None:
                outcome = await tool.run(arguments, context)
                assert outcome.ok, outcome.error

            await measure(round_trip, 1, WARM_UP)
            yield round_trip
    finally:
        await remote.close()
        await server.stop(0)
        await database.close()


async def serve_hand(target: str) -> None:
    """An SDK Hand with one echo tool, attached until killed."""
    from hand import Hand

    asks = os.environ.get(CLASSIC_VARIABLE) != "1"
    hand = Hand("bench", result_accepts=asks, batches=asks)

    @hand.tool
    async def echo(text: str = "") -> str:
        """Returns the text."""
        return text

    await hand.serve(target, os.environ[TOKEN_VARIABLE])


if __name__ == "__main__":
    import logging

    logging.basicConfig(level=logging.ERROR)
    asyncio.run(serve_hand(sys.argv[1]))
