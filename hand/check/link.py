"""A scripted Mind side of HandLink: it accepts one bearer token, welcomes each stream with
short timeouts, and otherwise sends only what the scenarios tell it to, so every frame the
Hand sees is chosen.

Each `Attach` call becomes a `Stream`: the Hand's hello, its reports sorted by task (in the
order they came), the times of its heartbeats, and a way to send frames or end the stream
with a status.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc

from tobe.runtime.status import status_codes
from tobe.v1 import hand_pb2, hand_pb2_grpc

Context = grpc.aio.ServicerContext[hand_pb2.AttachRequest, hand_pb2.AttachResponse]

# The welcome's timeouts, short so a run takes seconds.
HEARTBEAT_INTERVAL = 1.0
HEARTBEAT_TIMEOUT = 6.0
ACCEPT_TIMEOUT = 3.0
RUN_TIMEOUT = 60.0


@dataclass(frozen=True)
class _End:
    code: grpc.StatusCode
    details: str


@dataclass
class Stream:
    """One Attach stream as the check sees it."""

    number: int
    first: hand_pb2.AttachRequest
    # Reports per task id, in arrival order; a scenario takes them with `next_report`.
    reports: dict[str, list[hand_pb2.AttachRequest]] = field(
        default_factory=lambda: defaultdict(list)
    )
    heartbeats: list[float] = field(default_factory=list)
    # Frames that broke the frame order (a hello after the first frame).
    extra_hellos: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    _outbox: asyncio.Queue[hand_pb2.AttachResponse | _End] = field(default_factory=asyncio.Queue)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def hello(self) -> hand_pb2.HandHello:
        return self.first.hello

    def send(self, frame: hand_pb2.AttachResponse) -> None:
        self._outbox.put_nowait(frame)

    def end(self, code: grpc.StatusCode, details: str) -> None:
        """End the stream with this status once the frames sent before it are written."""
        self._outbox.put_nowait(_End(code, details))

    async def next_report(self, task_id: str, timeout: float) -> hand_pb2.AttachRequest | None:
        """The task's next report on this stream, or None when none came within `timeout`."""

        def ready() -> bool:
            return bool(self.reports[task_id]) or self.closed.is_set()

        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait_for(ready), timeout)
        queue = self.reports[task_id]
        return queue.pop(0) if queue else None

    async def heartbeat_after(self, since: float, timeout: float) -> float | None:
        """The time of the first heartbeat after `since` (time.monotonic), None if none came."""

        def later() -> float | None:
            return next((t for t in self.heartbeats if t > since), None)

        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: later() is not None or self.closed.is_set()),
                    timeout,
                )
        return later()

    async def _received(self, frame: hand_pb2.AttachRequest) -> None:
        kind = frame.WhichOneof("frame")
        async with self._changed:
            if kind == "heartbeat":
                self.heartbeats.append(time.monotonic())
            elif kind == "hello":
                self.extra_hellos += 1
            elif kind is not None:
                self.reports[getattr(frame, kind).task_id].append(frame)
            self._changed.notify_all()

    async def _close(self) -> None:
        async with self._changed:
            self.closed.set()
            self._changed.notify_all()


# The check raises no domain errors of its own: anything unexpected is INTERNAL and logged.
@status_codes({})
class ScriptedLink(hand_pb2_grpc.HandLinkServicer):
    """The check's HandLink servicer; new streams arrive on `streams`."""

    def __init__(self, token: str) -> None:
        self._authorization = f"Bearer {token}"
        self.streams: asyncio.Queue[Stream] = asyncio.Queue()
        self.refused: list[str] = []
        # Welcome the next streams granting result-as-acceptance and batches to a Hand that
        # asks for them.
        self.granting = False
        self._count = 0

    async def Attach(
        self,
        request_iterator: AsyncIterator[hand_pb2.AttachRequest],
        context: Context,
    ) -> AsyncIterator[hand_pb2.AttachResponse]:
        metadata = dict(context.invocation_metadata() or ())
        if metadata.get("authorization") != self._authorization:
            self.refused.append("a stream without the check's token")
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "not the check's token")
        frames = aiter(request_iterator)
        try:
            first = await asyncio.wait_for(anext(frames), HEARTBEAT_TIMEOUT)
        except (TimeoutError, StopAsyncIteration):
            self.refused.append(f"a stream without a first frame within {HEARTBEAT_TIMEOUT:g} s")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first frame must be hello")
        self._count += 1
        stream = Stream(self._count, first)
        if first.WhichOneof("frame") != "hello":
            self.refused.append(f"a stream whose first frame was {first.WhichOneof('frame')}")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first frame must be hello")
        reader = asyncio.create_task(self._read(stream, frames))
        try:
            yield hand_pb2.AttachResponse(
                welcome=hand_pb2.HandWelcome(
                    hand_id=uuid.uuid4().hex,
                    hand_name=first.hello.name,
                    heartbeat_interval_ms=int(HEARTBEAT_INTERVAL * 1000),
                    accept_timeout_ms=int(ACCEPT_TIMEOUT * 1000),
                    run_timeout_ms=int(RUN_TIMEOUT * 1000),
                    heartbeat_timeout_ms=int(HEARTBEAT_TIMEOUT * 1000),
                    serves_all=True,
                    result_accepts=self.granting and first.hello.result_accepts,
                    batches=self.granting and first.hello.batches,
                )
            )
            self.streams.put_nowait(stream)
            while True:
                outgoing = await stream._outbox.get()
                if isinstance(outgoing, _End):
                    await context.abort(outgoing.code, outgoing.details)
                yield outgoing
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            await stream._close()

    @staticmethod
    async def _read(stream: Stream, frames: AsyncIterator[hand_pb2.AttachRequest]) -> None:
        with contextlib.suppress(grpc.aio.AioRpcError, grpc.aio.AbortError):
            async for batch in frames:
                for frame in (batch, *batch.more):
                    await stream._received(frame)
        await stream._close()
