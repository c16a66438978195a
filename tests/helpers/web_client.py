"""A WebSocket client of Face's web transport for tests, checking every frame's gap-free seq.

It speaks what the browser app speaks: protobuf JSON text frames on `ws://<web>/ws`, the
credential in the `tobe_session` cookie. Frames are read by a background task into a queue;
helpers wait on frames, never sleep. `closed` holds the close code and reason Face sent.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from helpers.face_client import FRAME_TIMEOUT, GapError
from tobe.v1 import common_pb2, events_pb2, face_pb2


def frame_json(request: face_pb2.ConnectRequest) -> str:
    return json_format.MessageToJson(request, indent=None)


def parse_frame(text: str | bytes) -> face_pb2.ConnectResponse:
    return json_format.Parse(text, face_pb2.ConnectResponse())


async def open_socket(
    web_address: str, token: str | None, *, origin: str | None = None, **options: Any
) -> ClientConnection:
    """A WebSocket to Face's `/ws` with the session cookie `token` (None: no cookie)."""
    headers = {"Cookie": f"tobe_session={token}"} if token is not None else {}
    if origin is not None:
        headers["Origin"] = origin
    return await connect(
        f"ws://{web_address}/ws",
        additional_headers=headers,
        max_size=None,
        ping_interval=None,
        compression=None,
        open_timeout=FRAME_TIMEOUT,
        **options,
    )


async def close_of(socket: ClientConnection, timeout: float = FRAME_TIMEOUT) -> tuple[int, str]:
    """Read until Face closes the socket; its close code and reason."""

    async def drain() -> None:
        try:
            async for _ in socket:
                pass
        except ConnectionClosed:
            pass

    await asyncio.wait_for(drain(), timeout)
    assert socket.close_code is not None
    return socket.close_code, socket.close_reason or ""


@dataclass
class WebClient:
    socket: ClientConnection
    welcome: face_pb2.Welcome
    frames: asyncio.Queue[face_pb2.ConnectResponse] = field(default_factory=asyncio.Queue)
    events: list[events_pb2.Event] = field(default_factory=list)
    last_seq: int = 1
    closed: tuple[int, str] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _reader: asyncio.Task[None] | None = None

    @classmethod
    async def connect(
        cls,
        web_address: str,
        token: str,
        *,
        mode: int = common_pb2.DETAIL_MODE_TRANSPARENT,
        resume_after_id: int = 0,
    ) -> WebClient:
        socket = await open_socket(web_address, token)
        hello = face_pb2.Hello(
            detail_mode=mode, client_name="web test", resume_after_id=resume_after_id
        )
        await socket.send(frame_json(face_pb2.ConnectRequest(request_id="hello", hello=hello)))
        first = parse_frame(await asyncio.wait_for(socket.recv(), FRAME_TIMEOUT))
        assert first.seq == 1 and first.HasField("welcome"), first
        client = cls(socket, first.welcome)
        client._reader = asyncio.create_task(client._read())
        return client

    async def _read(self) -> None:
        try:
            async for text in self.socket:
                frame = parse_frame(text)
                if frame.seq != self.last_seq + 1:
                    raise GapError(f"seq {frame.seq} after {self.last_seq}")
                self.last_seq = frame.seq
                if frame.HasField("event"):
                    self.events.append(frame.event)
                await self.frames.put(frame)
        except ConnectionClosed:
            pass
        finally:
            if self.socket.close_code is not None:
                self.closed = (self.socket.close_code, self.socket.close_reason or "")
            self.done.set()

    async def send(self, **frame: Any) -> str:
        request_id = f"r{next(self._ids)}"
        request = face_pb2.ConnectRequest(request_id=request_id, **frame)
        await self.socket.send(frame_json(request))
        return request_id

    async def command(self, **frame: Any) -> face_pb2.Reply:
        request_id = await self.send(**frame)
        found = await self.wait_frame(
            lambda f: f.HasField("reply") and f.reply.request_id == request_id
        )
        return found.reply

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

    async def wait_closed(self, timeout: float = FRAME_TIMEOUT) -> tuple[int, str] | None:
        await asyncio.wait_for(self.done.wait(), timeout)
        return self.closed

    def durable_ids(self) -> list[int]:
        return [e.durable_id for e in self.events if e.durable_id > 0]

    async def close(self) -> None:
        await self.socket.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
