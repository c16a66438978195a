"""Remote task round trips per second next to a raw gRPC bidirectional echo.

A round trip is one remote tool call: offer → accepted → result, each transition committed to
the store (SQLite file, WAL, through the store's group-committing writer) before it is
acknowledged, through the real HandLink servicer, the Authority, the Registry and an SDK Hand
with a no-op tool. The baseline is a bidirectional stream on the same kind of server that
answers every frame at once. Both run with 1 and with 32 round trips in flight, in this
process, one after the other.

Reproduce:

    python bench/bench_remote_tasks.py            # 5 s per measurement
    python bench/bench_remote_tasks.py --seconds 2
    python bench/bench_remote_tasks.py --url postgresql://user@host/empty_db
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from hand import Hand
from mind.auth import AuthInterceptor
from mind.credentials import issue, store_authenticator
from mind.remote.execution import RemoteExecution
from mind.store.database import Database, WriteTx
from mind.store.migrate import upgrade
from mind.store.models import Conversation, Credential
from mind.tools.base import DetailMode, ToolContext
from tobe.config import RemoteSettings
from tobe.runtime.channel import open_channel
from tobe.runtime.server import ServiceSpec, start_server
from tobe.v1 import hand_pb2, hand_pb2_grpc

CONVERSATION = "p_bench"


class EchoLink(hand_pb2_grpc.HandLinkServicer):
    """Answers every frame with an ack at once: the cost of the stream alone."""

    async def Attach(  # noqa: N802 - gRPC method name
        self, request_iterator: AsyncIterator[hand_pb2.AttachRequest], context: object
    ) -> AsyncIterator[hand_pb2.AttachResponse]:
        async for frame in request_iterator:
            yield hand_pb2.AttachResponse(
                ack=hand_pb2.ReportAck(task_id=frame.accepted.task_id, attempt=1)
            )


async def measure(
    round_trip: Callable[[int], Awaitable[None]], in_flight: int, seconds: float
) -> float:
    """Round trips per second with `in_flight` workers looping until the time is up."""
    deadline = time.perf_counter() + seconds
    done = 0

    async def worker(index: int) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await round_trip(index)
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(in_flight)))
    return done / (time.perf_counter() - start)


def echo_round_trip(calls: list) -> Callable[[int], Awaitable[None]]:
    """One frame out and its answer back, on worker `index`'s own stream."""
    frame = hand_pb2.AttachRequest(accepted=hand_pb2.TaskAccepted(task_id="t", attempt=1))

    async def round_trip(index: int) -> None:
        await calls[index].write(frame)
        await calls[index].read()

    return round_trip


async def echo_rates(seconds: float) -> dict[int, float]:
    spec = ServiceSpec(
        "tobe.v1.HandLink", lambda s: hand_pb2_grpc.add_HandLinkServicer_to_server(EchoLink(), s)
    )
    server = await start_server([spec], ["127.0.0.1:0"])
    target = f"127.0.0.1:{server.bound['127.0.0.1:0']}"
    rates: dict[int, float] = {}
    try:
        async with open_channel(target) as channel:
            for in_flight in (1, 32):
                calls = [hand_pb2_grpc.HandLinkStub(channel).Attach() for _ in range(in_flight)]
                rates[in_flight] = await measure(echo_round_trip(calls), in_flight, seconds)
                for call in calls:
                    call.cancel()
    finally:
        await server.stop(0)
    return rates


async def task_rates(seconds: float, url: str) -> dict[int, float]:
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
    hand = Hand("bench")

    @hand.tool
    async def noop() -> str:
        """Does nothing."""
        return "ok"

    serving = asyncio.create_task(hand.serve(f"127.0.0.1:{server.bound['127.0.0.1:0']}", token))
    rates: dict[int, float] = {}
    try:
        await asyncio.wait_for(hand.attached.wait(), 10)
        (tool,) = remote.tools.tools_for(CONVERSATION)
        context = ToolContext(
            CONVERSATION, "run", "call", "bench", DetailMode.SUMMARY, lambda _m, _f: None
        )

        async def round_trip(_index: int) -> None:
            outcome = await tool.run({}, context)
            assert outcome.ok, outcome.error

        for in_flight in (1, 32):
            rates[in_flight] = await measure(round_trip, in_flight, seconds)
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        await remote.close()
        await server.stop(0)
        await database.close()
    return rates


async def main(seconds: float, url: str) -> None:
    logging.basicConfig(level=logging.ERROR)
    echo = await echo_rates(seconds)
    with tempfile.TemporaryDirectory() as directory:
        tasks = await task_rates(seconds, url or f"sqlite:///{Path(directory) / 'bench.db'}")
    print(f"{'in flight':>9}  {'echo rt/s':>10}  {'task rt/s':>10}  {'task/echo':>9}")
    for in_flight in (1, 32):
        ratio = tasks[in_flight] / echo[in_flight]
        print(f"{in_flight:>9}  {echo[in_flight]:>10.0f}  {tasks[in_flight]:>10.0f}  {ratio:>9.3f}")
    print(f"scaling 32/1: echo {echo[32] / echo[1]:.2f}x, tasks {tasks[32] / tasks[1]:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each measurement")
    parser.add_argument("--url", default="", help="store URL (default: a temporary SQLite file)")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.seconds, arguments.url))
