"""Remote task round trips per second next to a raw gRPC bidirectional echo.

A round trip is one remote tool call (`hand_round_trip.py`): offer → result (→ ack), with
`accepted` only for a task still running after a moment (hand.proto's "Result as acceptance"),
each transition committed to the store (SQLite file, WAL, through the store's group-committing
writer) before it is acknowledged, through the real HandLink servicer (behind the
authenticating interceptor), the Authority, the Registry, and an SDK Hand with an echo tool in
a process of its own, as in a deployment.

Two baselines run in the same invocation, on the same kind of server, each with its peer in a
process of its own and the server's side measured, as the Mind's is:

* **echo**: the server writes a frame and reads the peer's answer;
* **messages**: the server exchanges exactly the frames of a quick round trip (offer, result,
  ack) and does nothing else: no store, no registry, no timers. It is the ceiling the
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
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path

import grpc
from hand_round_trip import WARM_UP, hand_round_trip, measure_with_cpu, script

from tobe.runtime.channel import open_channel
from tobe.runtime.server import ServiceSpec, start_server
from tobe.v1 import hand_pb2, hand_pb2_grpc

IN_FLIGHT = (1, 32)

OFFER = hand_pb2.AttachResponse(offer=hand_pb2.TaskOffer(task_id="t", attempt=1, tool="noop"))
ACK = hand_pb2.AttachResponse(ack=hand_pb2.ReportAck(task_id="t", attempt=1))
RESULT = hand_pb2.AttachRequest(
    result=hand_pb2.TaskResult(task_id="t", attempt=1, ok=True, output="ok")
)


class Counter:
    """Round trips completed by the server's side; counted only while `open`."""

    def __init__(self) -> None:
        self.done = 0
        self.open = True


class BaselineLink(hand_pb2_grpc.HandLinkServicer):
    """The server side of a baseline stream: the echo's two frames, or a round trip's three."""

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
                self._counter.done += 1


async def baseline_peer(target: str, streams: int) -> None:
    """The client side of `streams` baseline streams: answers an offer with a result, as a
    Hand does with a quick tool."""

    async def stream(channel: grpc.aio.Channel) -> None:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach()
        async for response in call:
            if response.WhichOneof("frame") == "offer":
                await call.write(RESULT)

    async with open_channel(target) as channel:
        await asyncio.gather(*(stream(channel) for _ in range(streams)), return_exceptions=True)


@contextlib.contextmanager
def peer(target: str, streams: int) -> Iterator[None]:
    """This script, run as the baseline's peer process, killed on the way out."""
    with script(__file__, "--peer", target, str(streams)):
        yield


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
            with peer(f"127.0.0.1:{server.bound['127.0.0.1:0']}", in_flight):
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


async def task_rates(seconds: float, url: str) -> tuple[dict[int, float], dict[int, float]]:
    """Round trips per second, and the Mind process's CPU milliseconds per round trip."""
    rates: dict[int, float] = {}
    cpu: dict[int, float] = {}
    async with hand_round_trip(url, {}) as round_trip:
        for in_flight in IN_FLIGHT:
            rates[in_flight], cpu[in_flight] = await measure_with_cpu(
                round_trip, in_flight, seconds
            )
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
        target, streams = sys.argv[2:]
        asyncio.run(baseline_peer(target, int(streams)))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each measurement")
    parser.add_argument("--url", default="", help="store URL (default: a temporary SQLite file)")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.seconds, arguments.url))
