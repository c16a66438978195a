"""Full chat turns per second through the Mind's gRPC API, next to raw gRPC unary echo.

A turn is one SendChat whose run makes two Scripted provider calls and one tool call
(`current_time`): 8 durable writes and their events, until the run's terminal event arrives on
a Subscribe stream. The baseline is a trivial unary echo served by a separate Python process on
the same machine, called with the same client concurrency; the ratio says how many echo calls
the cost of one turn buys.

Reproduce (from the repository root):

    python bench/bench_mind_turns.py --seconds 10 --concurrency 8
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.mind_process import running_mind

from tobe.v1 import common_pb2, mind_pb2, mind_pb2_grpc

ECHO_METHOD = "/bench.Echo/Echo"
SCRIPT = """
runs:
  - match: ".*"
    steps:
      - text: "checking"
        tool_calls: [{name: current_time, arguments: {timezone: UTC}}]
      - {expect: {last_role: tool}, text: "done"}
"""
T = TypeVar("T")
TERMINAL = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}


async def serve_echo() -> None:
    """The baseline server: one unary method returning its request bytes."""
    server = grpc.aio.server()
    handler = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler("bench.Echo", {"Echo": handler})]
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(port, flush=True)
    await server.wait_for_termination()


async def measure(call, seconds: float, concurrency: int) -> float:
    """Calls per second of `call()` run back to back by `concurrency` workers."""
    deadline = time.perf_counter() + seconds
    counts = [0] * concurrency

    async def worker(index: int) -> None:
        while time.perf_counter() < deadline:
            await call(index)
            counts[index] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return sum(counts) / (time.perf_counter() - started)


async def echo_rate(seconds: float, concurrency: int) -> float:
    process = subprocess.Popen(
        [sys.executable, __file__, "--echo-server"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            echo = channel.unary_unary(ECHO_METHOD)
            payload = b"x" * 64
            await echo(payload)
            return await measure(lambda _i: echo(payload), seconds, concurrency)
    finally:
        process.kill()
        process.wait()


class RunFollower:
    """Follows the Mind's event stream: which run took each sent message, and which runs ended.

    A send answered while its conversation is still busy (the previous run's terminal event can
    precede the conversation taking new input) is queued with no run id; the run that takes it
    is named by the user message's `message_appended` event, which carries the send's
    idempotency key.
    """

    def __init__(self, stream: AsyncIterator[mind_pb2.SubscribeResponse]) -> None:
        self._stream = stream
        self._run_of_key: dict[str, str] = {}
        self._ended: set[str] = set()
        self._changed = asyncio.Condition()
        self._failure: BaseException | None = None

    async def follow(self) -> None:
        try:
            async for item in self._stream:
                event = item.event
                kind = event.WhichOneof("payload")
                if kind == "message_appended" and event.message_appended.idempotency_key:
                    message = event.message_appended
                    self._run_of_key[message.idempotency_key] = message.run_id
                elif kind == "run_changed" and event.run_changed.state in TERMINAL:
                    self._ended.add(event.run_changed.id)
                else:
                    continue
                async with self._changed:
                    self._changed.notify_all()
            raise RuntimeError("the Mind's event stream ended")
        except BaseException as exc:
            self._failure = exc
            async with self._changed:
                self._changed.notify_all()
            raise

    async def run_taking(self, idempotency_key: str) -> str:
        return await self._wait(lambda: self._run_of_key.get(idempotency_key))

    async def ended(self, run_id: str) -> None:
        await self._wait(lambda: run_id in self._ended or None)

    async def _wait(self, found: Callable[[], T | None]) -> T:
        async with self._changed:
            while (result := found()) is None:
                if self._failure is not None:
                    raise RuntimeError("stopped following the Mind's events") from self._failure
                await self._changed.wait()
            return result


async def turn_rate(address: str, token: str, seconds: float, concurrency: int) -> float:
    metadata = (("authorization", f"Bearer {token}"),)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = mind_pb2_grpc.MindStub(channel)
        who = mind_pb2.OnBehalfOf(principal="bench", scopes=["chat"])
        keys = []
        for index in range(concurrency):
            request = mind_pb2.CreateConversationRequest(on_behalf_of=who, key=f"p_bench{index}")
            created = await stub.CreateConversation(request, metadata=metadata)
            keys.append(created.conversation.key)
        stream = stub.Subscribe(mind_pb2.SubscribeRequest(after_id=0), metadata=metadata)
        runs = RunFollower(stream)
        follower = asyncio.create_task(runs.follow())

        async def turn(index: int) -> None:
            idempotency_key = uuid.uuid4().hex
            sent = await stub.SendChat(
                mind_pb2.SendChatRequest(
                    on_behalf_of=who,
                    conversation_key=keys[index],
                    text="what time is it",
                    idempotency_key=idempotency_key,
                ),
                metadata=metadata,
            )
            await runs.ended(sent.run_id or await runs.run_taking(idempotency_key))

        await turn(0)
        try:
            return await measure(turn, seconds, concurrency)
        finally:
            stream.cancel()
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await follower


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--echo-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_server:
        asyncio.run(serve_echo())
        return
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.yaml"
        script.write_text(SCRIPT)
        with running_mind(Path(tmp), script=script, clients=()) as mind:
            turns = asyncio.run(
                turn_rate(mind.address, mind.gateway_token, args.seconds, args.concurrency)
            )
    echo = asyncio.run(echo_rate(args.seconds, args.concurrency))
    print(f"concurrency           {args.concurrency}")
    print(f"mind turns/s          {turns:10.1f}  (SendChat → 2 provider steps + 1 tool → terminal)")
    print(f"grpc unary echo/s     {echo:10.1f}")
    print(f"ratio echo/turn       {echo / turns:10.1f}  (one turn costs this many echo calls)")


if __name__ == "__main__":
    main()
