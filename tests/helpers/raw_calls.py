"""Calls with raw request bytes, for bodies no typed stub can send (bytes that are not protobuf)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import grpc

# Not protobuf: every byte is a varint continuation, so the first tag never ends.
UNDECODABLE = b"\xff" * 16


async def refusal(
    target: str,
    method: str,
    *,
    request_streaming: bool,
    response_streaming: bool,
    metadata: Sequence[tuple[str, str]] = (),
    frames: Sequence[bytes] = (UNDECODABLE,),
) -> grpc.aio.AioRpcError:
    """Send `frames` (one for a unary request) and return the status error the server answers."""
    async with grpc.aio.insecure_channel(target) as channel:
        try:
            if not request_streaming:
                (raw,) = frames
                if response_streaming:
                    async for _ in channel.unary_stream(method)(raw, metadata=metadata, timeout=20):
                        pass
                else:
                    await channel.unary_unary(method)(raw, metadata=metadata, timeout=20)
            else:
                call = channel.stream_stream(method)(metadata=metadata, timeout=20)
                for raw in frames:
                    await call.write(raw)
                while await call.read() is not grpc.aio.EOF:
                    pass
        except grpc.aio.AioRpcError as error:
            return error
    raise AssertionError(f"{method} accepted an undecodable request")


def wait_for_lines(read: Callable[[], list[str]], text: str, count: int) -> list[str]:
    """The lines of `read()` containing `text`, once there are at least `count` (20 s at most).

    A process writes its log line just before it answers, but the line reaches the test
    through a pipe or file a little later.
    """
    deadline = time.monotonic() + 20
    while True:
        lines = [line for line in read() if text in line]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)
