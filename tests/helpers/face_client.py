"""A plain FaceGateway client for tests: every frame it receives is checked for a gap-free seq.

Frames are read by a background task into a queue (unless `reading=False`, which models a
client that stops reading; `start_reading()` resumes). Helpers wait on frames, never sleep.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field

import grpc

from tobe.runtime.channel import bearer_metadata
from tobe.v1 import common_pb2, events_pb2, face_pb2, face_pb2_grpc

FRAME_TIMEOUT = 30.0
TERMINAL_RUN_STATES = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}
# A small, fixed HTTP/2 window, so that a client that stops reading is felt by the server soon.
SLOW_READER_OPTIONS = [
    ("grpc.http2.bdp_probe", 0),
    ("grpc.http2.lookahead_bytes", 16 * 1024),
]


async def refusal(address: str, token: str) -> grpc.StatusCode:
    """The status Face ends a call with on its credential alone: read without writing, as a
    hello written meanwhile could race the refusal (see `FaceClient.connect`)."""
    async with grpc.aio.insecure_channel(address) as channel:
        call = face_pb2_grpc.FaceGatewayStub(channel).Connect(
            metadata=bearer_metadata(token), timeout=FRAME_TIMEOUT
        )
        try:
            first = await call.read()
        except grpc.aio.AioRpcError as ended:
            return ended.code()
        raise AssertionError(f"Face accepted the credential and sent {first}")


class GapError(AssertionError):
    pass


@dataclass
class FaceClient:
    channel: grpc.aio.Channel
    call: grpc.aio.StreamStreamCall
    welcome: face_pb2.Welcome
    frames: asyncio.Queue[face_pb2.ConnectResponse] = field(default_factory=asyncio.Queue)
    events: list[events_pb2.Event] = field(default_factory=list)
    last_seq: int = 1
    status: grpc.aio.AioRpcError | None = None
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _reader: asyncio.Task[None] | None = None

    @classmethod
    async def connect(
        cls,
        address: str,
        token: str,
        *,
        mode: int = common_pb2.DETAIL_MODE_TRANSPARENT,
        resume_after_id: int = 0,
        reading: bool = True,
        options: list[tuple[str, int]] | None = None,
    ) -> FaceClient:
        channel = grpc.aio.insecure_channel(address, options=options or [])
        call = face_pb2_grpc.FaceGatewayStub(channel).Connect(metadata=bearer_metadata(token))
        hello = face_pb2.Hello(
            detail_mode=mode, client_name="test", resume_after_id=resume_after_id
        )
        # A refused credential ends the call without reading the hello; a write racing that
        # ending fails, as INTERNAL "Internal error from Core" when the status was still on
        # its way (which hides the status): check refusals with `refusal` instead.
        await call.write(face_pb2.ConnectRequest(request_id="hello", hello=hello))
        first = await call.read()
        assert first.seq == 1 and first.HasField("welcome"), first
        client = cls(channel, call, first.welcome)
        if reading:
            client.start_reading()
        return client

    def start_reading(self) -> None:
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            while True:
                frame = await self.call.read()
                if frame is grpc.aio.EOF:
                    break
                if frame.seq != self.last_seq + 1:
                    raise GapError(f"seq {frame.seq} after {self.last_seq}")
                self.last_seq = frame.seq
                if frame.HasField("event"):
                    self.events.append(frame.event)
                await self.frames.put(frame)
        except grpc.aio.AioRpcError as exc:
            self.status = exc
        finally:
            self.closed.set()

    async def send(self, **frame: object) -> str:
        request_id = f"r{next(self._ids)}"
        await self.call.write(face_pb2.ConnectRequest(request_id=request_id, **frame))
        return request_id

    async def next_frame(self, timeout: float = FRAME_TIMEOUT) -> face_pb2.ConnectResponse:
        return await asyncio.wait_for(self.frames.get(), timeout)

    async def reply(self, request_id: str) -> face_pb2.Reply:
        while True:
            frame = await self.next_frame()
            if frame.HasField("reply") and frame.reply.request_id == request_id:
                return frame.reply

    async def command(self, **frame: object) -> face_pb2.Reply:
        return await self.reply(await self.send(**frame))

    async def wait_event(self, predicate, timeout: float = FRAME_TIMEOUT) -> events_pb2.Event:
        """The first event received so far or later that satisfies `predicate`."""

        async def scan() -> events_pb2.Event:
            seen = 0
            while True:
                for event in self.events[seen:]:
                    if predicate(event):
                        return event
                seen = len(self.events)
                await self.next_frame(timeout)

        return await asyncio.wait_for(scan(), timeout)

    async def wait_frame(
        self, predicate, timeout: float = FRAME_TIMEOUT
    ) -> face_pb2.ConnectResponse:
        """The next frame that satisfies `predicate`."""

        async def scan() -> face_pb2.ConnectResponse:
            while True:
                frame = await self.frames.get()
                if predicate(frame):
                    return frame

        return await asyncio.wait_for(scan(), timeout)

    async def wait_closed(self, timeout: float = FRAME_TIMEOUT) -> grpc.aio.AioRpcError | None:
        await asyncio.wait_for(self.closed.wait(), timeout)
        return self.status

    def durable_ids(self) -> list[int]:
        return [e.durable_id for e in self.events if e.durable_id > 0]

    async def close(self) -> None:
        self.call.cancel()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        await self.channel.close()


def run_ended(run_id: str):
    """Predicate: the event is the terminal run_changed of `run_id`."""

    def match(event: events_pb2.Event) -> bool:
        return (
            event.HasField("run_changed")
            and event.run_changed.id == run_id
            and event.run_changed.state in TERMINAL_RUN_STATES
        )

    return match


def is_replay_done(frame: face_pb2.ConnectResponse) -> bool:
    return frame.HasField("replay_done")
