"""One client connection from authentication to its closing status, whatever the transport.

The gRPC servicer and the web client's WebSocket both run a `Session`: authenticate the client
credential, read the hello, open a `Connection` with its `CommandRouter`, read frames in a
task of their own, and write queued frames numbered 1, 2, 3… through the transport's
`FrameSink`, each within the write timeout. A client that does not read a frame in time is cut
off with RESOURCE_EXHAUSTED "resync required", exactly as the FaceGateway file comment says;
the transport only decides how bytes and closing statuses look on its wire.

A client that goes away may reach the session as a task cancellation (gRPC delivers it once):
every await must let it through, so writes are bounded with `asyncio.timeout`, never
`asyncio.wait_for` (see `within`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from face.commands import CommandRouter
from face.connection import Connection, Identity
from face.errors import GatewayError
from face.feed import EventFeed
from face.mind_client import MindClient
from face.projection import TRANSPARENT
from face.queue import Closing
from tobe import __version__, telemetry
from tobe.config import FaceSettings
from tobe.runtime.enum_values import undefined_enum
from tobe.telemetry import instruments
from tobe.v1 import face_pb2

log = logging.getLogger(__name__)

# A resync frame is best effort: it gets at most this long to be written.
RESYNC_WRITE_TIMEOUT = 1.0
# Closing code of a connection whose client already went away: nothing left to send.
GONE = "CANCELLED"


class ClientGone(Exception):
    """The client's side of the connection ended without a clean half-close (reset, close)."""


class FrameSink(Protocol):
    """How a transport puts frames on its wire."""

    async def write(self, seq: int, body: bytes) -> None:
        """Write one serialized ConnectResponse (`body`, without `seq`) numbered `seq`."""

    async def end(self, code: str, message: str) -> None:
        """End the connection with the status named `code` ("OK" for a clean end)."""


# The client's frames, parsed: the iterator ends when the client half-closes its side, raises
# GatewayError INVALID_ARGUMENT for a malformed frame and ClientGone when the client went away.
Frames = AsyncIterator[face_pb2.ConnectRequest]


def checked_frame(frame: face_pb2.ConnectRequest) -> face_pb2.ConnectRequest:
    """`frame`, once every enum value in it is one its enum defines; otherwise GatewayError
    INVALID_ARGUMENT naming the field, so no command sees a value it cannot name."""
    problem = undefined_enum(frame)
    if problem is not None:
        raise GatewayError("INVALID_ARGUMENT", f"malformed frame: {problem}")
    return frame


class Session:
    """What every transport shares: the Mind, the event feed and the [face] settings."""

    def __init__(self, mind: MindClient, feed: EventFeed, settings: FaceSettings) -> None:
        self.mind = mind
        self.feed = feed
        self.settings = settings
        # Where this Face serves the web client, for pairing links; "" while it serves none.
        self.web_base_url = ""

    async def identify(self, token: str, missing: str) -> Identity:
        """The principal of a client credential; UNAUTHENTICATED `missing` when there is none,
        or when the credential was revoked while this gateway runs."""
        if not token:
            raise GatewayError("UNAUTHENTICATED", missing)
        identity = await self.mind.authenticate(token)
        if identity.credential_id in self.feed.revoked:
            raise GatewayError("UNAUTHENTICATED", "credential revoked")
        return identity

    async def run(
        self,
        identity: Identity,
        frames: Frames,
        sink: FrameSink,
        on_open: Callable[[Connection], None] | None = None,
    ) -> None:
        """Serve one authenticated connection until it ends.

        GatewayError before the connection opens (no hello, a malformed first frame) is for the
        transport to end the stream with; afterwards every ending goes through `sink.end`.
        """
        first = await _first_frame(frames)
        if first is None:
            return
        if identity.credential_id in self.feed.revoked:
            raise GatewayError("UNAUTHENTICATED", "credential revoked")
        hello = first.hello
        connection = Connection(identity, hello.detail_mode, self.settings.queue_size)
        router = CommandRouter(connection, self.mind, self.feed, self.web_base_url)
        self.feed.connections.add(connection)
        instruments.face_connections.add(1)
        if on_open is not None:
            on_open(connection)
        log.info(
            "connection %s opened: principal %s, client %r, mode %s",
            connection.id,
            identity.principal,
            hello.client_name,
            "transparent" if connection.mode == TRANSPARENT else "summary",
        )
        connection.send(
            face_pb2.ConnectResponse(
                welcome=face_pb2.Welcome(
                    connection_id=connection.id,
                    principal=identity.principal,
                    scopes=identity.scopes,
                    detail_mode=connection.mode,
                    queue_capacity=self.settings.queue_size,
                    server_version=__version__,
                )
            )
        )
        if self.feed.link_down:
            connection.mind_link(self.feed.link_down)
        reader: asyncio.Task[None] | None = None
        try:
            if hello.resume_after_id > 0:
                instruments.face_resumes.add(1)
                await router.subscribe(first.request_id, hello.resume_after_id)
            reader = asyncio.create_task(_read_frames(frames, router, connection))
            await self._write(connection, sink)
        finally:
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
            await router.stop()
            self.feed.connections.discard(connection)
            instruments.face_connections.add(-1)
            connection.close(GONE, "the client went away")  # no-op when it ended otherwise
            log.info("%s", connection.describe_end())

    async def _write(self, connection: Connection, sink: FrameSink) -> None:
        """Write queued frames, numbered 1, 2, 3…, each within the write timeout."""
        seq = 0
        timeout = self.settings.write_timeout
        while True:
            item = await connection.queue.get()
            if isinstance(item, Closing):
                await self._finish(connection, sink, item, seq)
                return
            seq += 1
            if not await within(timeout, sink.write(seq, item.body)):
                connection.close("RESOURCE_EXHAUSTED", "resync required")
                log.info(
                    "connection %s did not read a frame within %.1fs; cut off",
                    connection.id,
                    timeout,
                )
                await sink.end("RESOURCE_EXHAUSTED", "resync required")
                return
            if item.durable_id > connection.written_durable_id:
                connection.written_durable_id = item.durable_id

    async def _finish(
        self, connection: Connection, sink: FrameSink, closing: Closing, seq: int
    ) -> None:
        if closing.resync:
            body = connection.resync_frame().SerializeToString()
            await within(RESYNC_WRITE_TIMEOUT, sink.write(seq + 1, body))
        if closing.code != GONE:
            await sink.end(closing.code, closing.message)


async def within(seconds: float, operation: Awaitable[None]) -> bool:
    """Await `operation` in this task for at most `seconds`; False when the time ran out.

    Not `asyncio.wait_for`: before Python 3.12 it runs the operation in a task of its own, and
    when that task completes in the same loop iteration as this one is cancelled (the client
    going away just as its frame is written) it returns the result and drops the cancellation.
    gRPC cancels a handler only once, so the connection would then stay open, subscribed, until
    a later write failed.
    """
    try:
        async with asyncio.timeout(seconds):
            await operation
    except TimeoutError:
        return False
    return True


async def _first_frame(frames: Frames) -> face_pb2.ConnectRequest | None:
    try:
        first = await anext(frames, None)
    except ClientGone:
        return None
    if first is None:
        return None
    if first.WhichOneof("frame") != "hello":
        raise GatewayError("FAILED_PRECONDITION", "hello required")
    return first


async def _read_frames(frames: Frames, router: CommandRouter, connection: Connection) -> None:
    try:
        async for request in frames:
            with (
                telemetry.resumed(request.trace_context),
                telemetry.span(f"face {request.WhichOneof('frame')}", kind="server"),
            ):
                await router.handle(request)
    except GatewayError as exc:
        connection.close(exc.code, exc.message)
        return
    except ClientGone:
        connection.close(GONE, "the client went away")
        return
    # The client half-closed: a subscribed connection keeps receiving events; otherwise the
    # stream ends once the queued replies are written.
    if not router.subscribed:
        await router.settle()
        connection.queue.finish(Closing("OK", "client closed its side"))
