"""The FaceGateway servicer: the gRPC transport of a client `Session`.

Frames are registered with raw-bytes (de)serializers: a frame that does not parse, or holds an
enum value its enum does not define, is answered by the gateway itself (INVALID_ARGUMENT)
instead of by the gRPC runtime, and an event rendered once is shared as bytes by every
connection, each prefixing its own `seq` field.

A client that goes away (cancel, reset) reaches the handler as a task cancellation from gRPC,
delivered once; `face.session` lets it through every await.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import grpc
from google.protobuf.message import DecodeError

from face.connection import Connection
from face.errors import GatewayError
from face.feed import EventFeed
from face.mind_client import MindClient
from face.session import GONE, ClientGone, Frames, Session, checked_frame, within
from tobe.config import FaceSettings
from tobe.runtime.status import StatusTable, status_codes
from tobe.v1 import face_pb2, face_pb2_grpc

log = logging.getLogger(__name__)

SERVICE_NAME = "tobe.v1.FaceGateway"
MISSING_CREDENTIAL = "missing credential: send metadata `authorization: Bearer <client credential>`"

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


class GrpcSink:
    """Frames of one Connect call: protobuf bytes with a `seq` prefix, and a closing status."""

    def __init__(self, context: Context, write_timeout: float) -> None:
        self._context = context
        self._write_timeout = write_timeout

    async def write(self, seq: int, body: bytes) -> None:
        await self._context.write(seq_prefix(seq) + body)

    async def end(self, code: str, message: str) -> None:
        """End the stream with a status, without waiting on a client that does not read.

        The status queues behind frames the client has not read; waiting for it would keep the
        connection alive for as long as the client stalls. After the write timeout the handler
        returns and the status stays with gRPC, which delivers it if the client reads again.
        """
        if code == "OK":
            return
        aborted = self._context.abort(grpc.StatusCode[code], message)
        if not await within(self._write_timeout, aborted):
            log.info("status %s for a client that does not read left with gRPC", code)


async def _frames(requests: AsyncIterator[bytes]) -> Frames:
    try:
        async for raw in requests:
            try:
                frame = face_pb2.ConnectRequest.FromString(raw)
            except DecodeError:
                raise GatewayError(
                    "INVALID_ARGUMENT", "malformed frame: not a ConnectRequest"
                ) from None
            yield checked_frame(frame)
    except grpc.aio.AioRpcError:
        raise ClientGone() from None


@status_codes(FACE_STATUS_CODES)
class FaceGatewayServicer(face_pb2_grpc.FaceGatewayServicer):
    def __init__(self, mind: MindClient, feed: EventFeed, settings: FaceSettings) -> None:
        # Shared with the web transport, which serves the same connections over WebSocket.
        self.session = Session(mind, feed, settings)
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
    async def Connect(self, requests: AsyncIterator[bytes], context: Context) -> None:  # type: ignore[override]
        identity = await self.session.identify(_bearer_token(context), MISSING_CREDENTIAL)

        def on_open(connection: Connection) -> None:
            # A client that goes away (cancel, reset) must not leave an idle writer behind.
            # The grpc stubs type the callback as a class of theirs, which no function is.
            context.add_done_callback(lambda _: connection.close(GONE, "the client went away"))  # type: ignore[arg-type]

        sink = GrpcSink(context, self._settings.write_timeout)
        await self.session.run(identity, _frames(requests), sink, on_open)
