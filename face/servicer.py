"""The FaceGateway servicer: authentication, the hello handshake, and the writer of a connection.

Frames are registered with raw-bytes (de)serializers: a frame that does not parse is answered
by the gateway itself (INVALID_ARGUMENT) instead of by the gRPC runtime, and an event rendered
once is shared as bytes by every connection, each prefixing its own `seq` field.

A client that goes away (cancel, reset) reaches the handler as a task cancellation from gRPC,
delivered once: every await of the handler must let it through, so writes are bounded with
`asyncio.timeout`, never `asyncio.wait_for` (see `_within`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable

import grpc
from google.protobuf.message import DecodeError

from face.commands import CommandRouter
from face.connection import Connection
from face.errors import GatewayError
from face.feed import EventFeed
from face.mind_client import MindClient
from face.projection import TRANSPARENT
from face.queue import Closing
from tobe import __version__
from tobe.config import FaceSettings
from tobe.runtime.status import StatusTable, status_codes
from tobe.v1 import face_pb2, face_pb2_grpc

log = logging.getLogger(__name__)

SERVICE_NAME = "tobe.v1.FaceGateway"
# A resync frame is best effort: it gets at most this long to be written.
RESYNC_WRITE_TIMEOUT = 1.0
# Closing code of a connection whose RPC already ended: nothing left to send.
GONE = "CANCELLED"

# Connect's frames are raw bytes both ways (see `FaceGatewayServicer.register`).
Context = grpc.aio.ServicerContext[bytes, bytes]


def seq_prefix(seq: int) -> bytes:
    """Wire encoding of `ConnectResponse.seq` (field 1, varint); fields may come in any order."""
    out = bytearray(b"\x08")
    while True:
        byte = seq & 0x7F
        seq >>= 7
        if seq:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _relayed(error: GatewayError) -> tuple[grpc.StatusCode, str]:
    """A gateway error ends the call with the status it names (often the Mind's own)."""
    return grpc.StatusCode[error.code], error.message


FACE_STATUS_CODES: StatusTable = {GatewayError: _relayed}


def _bearer_token(context: Context) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and isinstance(value, str):
            scheme, _, token = value.partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""


@status_codes(FACE_STATUS_CODES)
class FaceGatewayServicer(face_pb2_grpc.FaceGatewayServicer):
    def __init__(self, mind: MindClient, feed: EventFeed, settings: FaceSettings) -> None:
        self._mind = mind
        self._feed = feed
        self._settings = settings

    def register(self, server: grpc.aio.Server) -> None:
        handler: grpc.RpcMethodHandler[bytes, bytes] = grpc.stream_stream_rpc_method_handler(
            self.Connect, request_deserializer=None, response_serializer=None
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE_NAME, {"Connect": handler}),)
        )

    # Registered with raw-bytes (de)serializers, not as the generated base declares it: it reads
    # frames as bytes and writes them through `context`.
    async def Connect(self, requests: AsyncIterator[bytes], context: Context) -> None:  # type: ignore[override]  # noqa: N802 - gRPC method name
        token = _bearer_token(context)
        if not token:
            raise GatewayError(
                "UNAUTHENTICATED",
                "missing credential: send metadata `authorization: Bearer <client credential>`",
            )
        identity = await self._mind.authenticate(token)
        first = await _first_frame(requests)
        if first is None:
            return
        if identity.credential_id in self._feed.revoked:
            raise GatewayError("UNAUTHENTICATED", "credential revoked")
        hello = first.hello
        connection = Connection(identity, hello.detail_mode, self._settings.queue_size)
        router = CommandRouter(connection, self._mind, self._feed)
        self._feed.connections.add(connection)
        # A client that goes away (cancel, reset) must not leave an idle writer behind.
        # The grpc stubs type the callback as a class of theirs, which no function is.
        context.add_done_callback(lambda _: connection.close(GONE, "the client went away"))  # type: ignore[arg-type]
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
                    queue_capacity=self._settings.queue_size,
                    server_version=__version__,
                )
            )
        )
        reader: asyncio.Task[None] | None = None
        try:
            if hello.resume_after_id > 0:
                await router.subscribe(first.request_id, hello.resume_after_id)
            reader = asyncio.create_task(_read_frames(requests, router, connection))
            await self._write(connection, context)
        finally:
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
            await router.stop()
            self._feed.connections.discard(connection)
            connection.close(GONE, "the client went away")  # no-op when it ended otherwise
            log.info("%s", connection.describe_end())

    async def _write(self, connection: Connection, context: Context) -> None:
        """Write queued frames, numbered 1, 2, 3…, each within the write timeout."""
        seq = 0
        timeout = self._settings.write_timeout
        while True:
            item = await connection.queue.get()
            if isinstance(item, Closing):
                await self._finish(connection, context, item, seq)
                return
            seq += 1
            if not await _within(timeout, context.write(seq_prefix(seq) + item.body)):
                connection.close("RESOURCE_EXHAUSTED", "resync required")
                log.info(
                    "connection %s did not read a frame within %.1fs; cut off",
                    connection.id,
                    timeout,
                )
                await self._abort(context, "RESOURCE_EXHAUSTED", "resync required")
                return
            if item.durable_id > connection.written_durable_id:
                connection.written_durable_id = item.durable_id

    async def _finish(
        self,
        connection: Connection,
        context: Context,
        closing: Closing,
        seq: int,
    ) -> None:
        if closing.resync:
            frame = seq_prefix(seq + 1) + connection.resync_frame().SerializeToString()
            await _within(RESYNC_WRITE_TIMEOUT, context.write(frame))
        if closing.code not in ("OK", GONE):
            await self._abort(context, closing.code, closing.message)

    async def _abort(self, context: Context, code: str, message: str) -> None:
        """End the stream with a status, without waiting on a client that does not read.

        The status queues behind frames the client has not read; waiting for it would keep the
        connection alive for as long as the client stalls. After the write timeout the handler
        returns and the status stays with gRPC, which delivers it if the client reads again.
        """
        if not await _within(
            self._settings.write_timeout, context.abort(grpc.StatusCode[code], message)
        ):
            log.info("status %s for a client that does not read left with gRPC", code)


async def _within(seconds: float, operation: Awaitable[None]) -> bool:
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


async def _first_frame(requests: AsyncIterator[bytes]) -> face_pb2.ConnectRequest | None:
    raw = await anext(requests, None)
    if raw is None:
        return None
    try:
        first = face_pb2.ConnectRequest.FromString(raw)
    except DecodeError:
        raise GatewayError("INVALID_ARGUMENT", "malformed frame: not a ConnectRequest") from None
    if first.WhichOneof("frame") != "hello":
        raise GatewayError("FAILED_PRECONDITION", "hello required")
    return first


async def _read_frames(
    requests: AsyncIterator[bytes], router: CommandRouter, connection: Connection
) -> None:
    try:
        async for raw in requests:
            try:
                request = face_pb2.ConnectRequest.FromString(raw)
            except DecodeError:
                connection.close("INVALID_ARGUMENT", "malformed frame: not a ConnectRequest")
                return
            await router.handle(request)
    except grpc.aio.AioRpcError:
        return
    # The client half-closed: a subscribed connection keeps receiving events; otherwise the
    # stream ends once the queued replies are written.
    if not router.subscribed:
        await router.settle()
        connection.queue.finish(Closing("OK", "client closed its side"))
