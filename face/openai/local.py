"""A Face connection held inside the Face process, for the endpoints that speak other wires.

It runs the same `Session` as a gRPC or WebSocket client (the same `Connection`, command
router, projection, scope checks and revocation), with its frames passed in memory: what the
OpenAI-compatible endpoint can do is exactly what any other client of the Face can do.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any, Self

from face.commands import status_name
from face.connection import Identity
from face.errors import GatewayError
from face.session import ClientGone, Session
from tobe.v1 import common_pb2, events_pb2, face_pb2

# How long a closing connection may take to end its session.
CLOSE_TIMEOUT = 5.0


class ConnectionEnded(GatewayError):
    """The Face ended the connection (credential revoked, queue overflow, Face stopping)."""


class LocalConnection:
    """One in-process connection: `call` sends a command and waits for its reply; `events`
    yields what the connection is shown once it has subscribed."""

    def __init__(self, session: Session, identity: Identity, client_name: str) -> None:
        self._session = session
        self._identity = identity
        self._hello = face_pb2.Hello(
            client_name=client_name, detail_mode=common_pb2.DETAIL_MODE_SUMMARY
        )
        self._outgoing: asyncio.Queue[face_pb2.ConnectRequest | None] = asyncio.Queue()
        self._replies: dict[str, asyncio.Future[face_pb2.Reply]] = {}
        self._events: asyncio.Queue[events_pb2.Event | ConnectionEnded] = asyncio.Queue()
        self._welcome: asyncio.Future[face_pb2.Welcome] | None = None
        self._ids = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        self._ended: ConnectionEnded | None = None

    async def __aenter__(self) -> Self:
        self._welcome = asyncio.get_running_loop().create_future()
        self._outgoing.put_nowait(face_pb2.ConnectRequest(hello=self._hello))
        self._task = asyncio.create_task(self._serve())
        opened: set[asyncio.Future[Any]] = {self._welcome, self._task}
        await asyncio.wait(opened, return_when=asyncio.FIRST_COMPLETED)
        if not self._welcome.done():
            await self.__aexit__()
            raise self._ended or ConnectionEnded("UNAVAILABLE", "the connection did not open")
        return self

    async def __aexit__(self, *_: object) -> None:
        self._outgoing.put_nowait(None)
        if self._task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._task), CLOSE_TIMEOUT)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def call(self, **frame: Any) -> face_pb2.Reply:
        """Send one command frame (`ConnectRequest`'s field name → message); its reply, or
        GatewayError with the status the command failed with."""
        if self._ended is not None:
            raise self._ended
        request_id = str(next(self._ids))
        waiting: asyncio.Future[face_pb2.Reply] = asyncio.get_running_loop().create_future()
        self._replies[request_id] = waiting
        self._outgoing.put_nowait(face_pb2.ConnectRequest(request_id=request_id, **frame))
        reply = await waiting
        if reply.HasField("error"):
            raise GatewayError(status_name(reply.error.code), reply.error.message)
        return reply

    async def mind(self, **call: Any) -> face_pb2.MindReply:
        """A Mind call through the connection (a `mind` frame); the Mind's reply."""
        reply = await self.call(mind=face_pb2.MindCall(**call))
        return reply.mind

    async def events(self) -> AsyncIterator[events_pb2.Event]:
        """The events shown to this connection, until it ends (then ConnectionEnded)."""
        while True:
            item = await self._events.get()
            if isinstance(item, ConnectionEnded):
                raise item
            yield item

    async def _serve(self) -> None:
        try:
            await self._session.run(self._identity, self._frames(), self)
        except GatewayError as exc:
            self._end(exc.code, exc.message)
        finally:
            self._end("CANCELLED", "the connection closed")

    async def _frames(self) -> AsyncIterator[face_pb2.ConnectRequest]:
        while (request := await self._outgoing.get()) is not None:
            yield request
        raise ClientGone()

    # -- FrameSink ------------------------------------------------------------------------

    async def write(self, seq: int, body: bytes) -> None:
        response = face_pb2.ConnectResponse.FromString(body)
        kind = response.WhichOneof("frame")
        if kind == "welcome" and self._welcome is not None and not self._welcome.done():
            self._welcome.set_result(response.welcome)
        elif kind == "reply":
            waiting = self._replies.pop(response.reply.request_id, None)
            if waiting is not None and not waiting.done():
                waiting.set_result(response.reply)
        elif kind == "event":
            self._events.put_nowait(response.event)
        elif kind == "mind_link" and not response.mind_link.up:
            self._end("UNAVAILABLE", response.mind_link.reason or "the Face lost the Mind")

    async def end(self, code: str, message: str) -> None:
        self._end(code, message)

    def _end(self, code: str, message: str) -> None:
        if self._ended is not None:
            return
        self._ended = ConnectionEnded(code, message)
        for waiting in self._replies.values():
            if not waiting.done():
                waiting.set_exception(self._ended)
        self._replies.clear()
        self._events.put_nowait(self._ended)
