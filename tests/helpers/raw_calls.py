"""Calls with raw request bytes, for bodies no typed stub can send (bytes that are not protobuf)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc

from helpers.eventually import eventually

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
    return eventually(
        lambda: [line for line in read() if text in line],
        20,
        until=lambda lines: len(lines) >= count,
        what=f"{count} log line(s) containing {text!r}",
    )
