"""Remote task round trips per second next to a raw gRPC bidirectional echo.

A round trip is one remote tool call: offer → accepted → result, each transition committed to
the store (SQLite file, WAL, through the store's group-committing writer) before it is
acknowledged, through the real HandLink servicer (behind the authenticating interceptor), the
Authority, the Registry, and an SDK Hand with a no-op tool in a process of its own, as in a
deployment.

Two baselines run in the same invocation, on the same kind of server, each with its peer in a
process of its own and the server's side measured, as the Mind's is:

* **echo**: the server writes a frame and reads the peer's answer;
* **messages**: the server exchanges exactly the frames of a round trip (offer, accepted, ack,
  result, ack) and does nothing else: no store, no registry, no timers. It is the ceiling the
  protocol allows on this machine; `messages/echo` shows what the frames alone cost.

Each runs with 1 and with 32 round trips in flight.

Reproduce:

    python bench/bench_remote_tasks.py            # 5 s per measurement
    python bench/bench_remote_tasks.py --seconds 2
    python bench/bench_remote_tasks.py --url postgresql://user@host/empty_db
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path

import grpc

from mind.credentials import issue, store_authenticator
from mind.credentials.interceptor import AuthInterceptor
from mind.remote.execution import RemoteExecution
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.models import Conversation, Credential
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode, ToolContext
from tobe.config import RemoteSettings
from tobe.runtime.channel import open_channel
from tobe.runtime.server import ServiceSpec, start_server
from tobe.v1 import hand_pb2, hand_pb2_grpc

CONVERSATION = "p_bench"
IN_FLIGHT = (1, 32)
TOKEN_VARIABLE = "TOBE_BENCH_HAND_TOKEN"
WARM_UP = 0.5

OFFER = hand_pb2.AttachResponse(offer=hand_pb2.TaskOffer(task_id="t", attempt=1, tool="noop"))
ACK = hand_pb2.AttachResponse(ack=hand_pb2.ReportAck(task_id="t", attempt=1))
ACCEPTED = hand_pb2.AttachRequest(accepted=hand_pb2.TaskAccepted(task_id="t", attempt=1))
RESULT = hand_pb2.AttachRequest(
    result=hand_pb2.TaskResult(task_id="t", attempt=1, ok=True, output="ok")
)


class Counter:
    """Round trips completed by the server's side; counted only while `open`."""

    def __init__(self) -> None:
        self.done = 0
        self.open = True


class BaselineLink(hand_pb2_grpc.HandLinkServicer):
    """The server side of a baseline stream: the echo's two frames, or a round trip's five."""

    def __init__(self, pattern: str, counter: Counter) -> None:
        self._pattern = pattern
        self._counter = counter

    async def Attach(
        self,
        request_iterator: AsyncIterator[hand_pb2.AttachRequest],
        context: grpc.aio.ServicerContext[hand_pb2.AttachRequest, hand_pb2.AttachResponse],
    ) -> None:
        frames = aiter(request_iterator)
        with contextlib.suppress(StopAsyncIteration):  # the peer is gone: the run is over
            while self._counter.open:
                await context.write(OFFER)
                await anext(frames)
                if self._pattern == "messages":
                    await context.write(ACK)
                    await anext(frames)
                    await context.write(ACK)
                self._counter.done += 1


async def baseline_peer(target: str, streams: int) -> None:
    """The client side of `streams` baseline streams: answers an offer with accepted and
    every second ack with a result, as a Hand does."""

    async def stream(channel: grpc.aio.Channel) -> None:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach()
        acks = 0
        async for response in call:
            if response.WhichOneof("frame") == "offer":
                await call.write(ACCEPTED)
            else:
                acks += 1
                if acks % 2:
                    await call.write(RESULT)

    async with open_channel(target) as channel:
        await asyncio.gather(*(stream(channel) for _ in range(streams)), return_exceptions=True)


async def hand_peer(target: str) -> None:
    """An SDK Hand with one no-op tool, attached until killed."""
    from hand import Hand

    hand = Hand("bench")

    @hand.tool
    async def noop() -> str:
        """Does nothing."""
        return "ok"

    await hand.serve(target, os.environ[TOKEN_VARIABLE])


@contextlib.contextmanager
def peer(*arguments: str, env: dict[str, str] | None = None) -> Iterator[None]:
    """This script, run as a peer process, killed on the way out."""
    command = [sys.executable, __file__, "--peer", *arguments]
    process = subprocess.Popen(command, env={**os.environ, **(env or {})})
    try:
        yield
    finally:
        process.kill()
        process.wait()


async def baseline_rates(pattern: str, seconds: float) -> dict[int, float]:
    rates: dict[int, float] = {}
    for in_flight in IN_FLIGHT:
        counter = Counter()
        link = BaselineLink(pattern, counter)
        spec = ServiceSpec(
            "tobe.v1.HandLink", partial(hand_pb2_grpc.add_HandLinkServicer_to_server, link)
        )
        server = await start_server([spec], ["127.0.0.1:0"])
        try:
            with peer("baseline", f"127.0.0.1:{server.bound['127.0.0.1:0']}", str(in_flight)):
                while not counter.done:  # the peer process is still starting
                    await asyncio.sleep(0.05)
                await asyncio.sleep(WARM_UP)
                start, before = time.perf_counter(), counter.done
                await asyncio.sleep(seconds)
                rates[in_flight] = (counter.done - before) / (time.perf_counter() - start)
                counter.open = False
        finally:
            await server.stop(0)
    return rates


async def measure(
    round_trip: Callable[[], Awaitable[None]], in_flight: int, seconds: float
) -> float:
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


async def task_rates(seconds: float, url: str) -> tuple[dict[int, float], dict[int, float]]:
    """Round trips per second, and the Mind process's CPU milliseconds per round trip."""
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
    rates: dict[int, float] = {}
    cpu: dict[int, float] = {}
    target = f"127.0.0.1:{server.bound['127.0.0.1:0']}"
    try:
        with peer("hand", target, env={TOKEN_VARIABLE: token}):
            while not remote.tools.tools_for(CONVERSATION):
                await asyncio.sleep(0.05)
            (tool,) = remote.tools.tools_for(CONVERSATION)
            context = ToolContext(
                CONVERSATION, "run", "call", "bench", DetailMode.SUMMARY, lambda _m, _f: None
            )

            async def round_trip() -> None:
                outcome = await tool.run({}, context)
                assert outcome.ok, outcome.error

            await measure(round_trip, 1, WARM_UP)
            for in_flight in IN_FLIGHT:
                started = time.process_time()
                rates[in_flight] = await measure(round_trip, in_flight, seconds)
                spent = time.process_time() - started
                cpu[in_flight] = spent * 1000 / (rates[in_flight] * seconds)
    finally:
        await remote.close()
        await server.stop(0)
        await database.close()
    return rates, cpu


async def main(seconds: float, url: str) -> None:
    logging.basicConfig(level=logging.ERROR)
    echo = await baseline_rates("echo", seconds)
    messages = await baseline_rates("messages", seconds)
    with tempfile.TemporaryDirectory() as directory:
        tasks, cpu = await task_rates(seconds, url or f"sqlite:///{Path(directory) / 'bench.db'}")
    print(
        f"{'in flight':>9}  {'echo rt/s':>10}  {'messages rt/s':>13}  {'task rt/s':>10}  "
        f"{'messages/echo':>13}  {'task/echo':>9}  {'Mind CPU ms/rt':>14}"
    )
    for n in IN_FLIGHT:
        print(
            f"{n:>9}  {echo[n]:>10.0f}  {messages[n]:>13.0f}  {tasks[n]:>10.0f}  "
            f"{messages[n] / echo[n]:>13.3f}  {tasks[n] / echo[n]:>9.3f}  {cpu[n]:>14.2f}"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peer"]:
        logging.basicConfig(level=logging.ERROR)
        role, target, *streams = sys.argv[2:]
        if role == "baseline":
            asyncio.run(baseline_peer(target, int(streams[0])))
        else:
            asyncio.run(hand_peer(target))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each measurement")
    parser.add_argument("--url", default="", help="store URL (default: a temporary SQLite file)")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.seconds, arguments.url))
