"""Requests that are not valid protobuf end with INVALID_ARGUMENT, not with UNKNOWN.

gRPC decodes a request before the servicer runs; a `DecodeError` there is logged with a
traceback and answered `UNKNOWN: Unexpected <class 'DecodeError'>`. `DecodingInterceptor`
takes decoding over: the method receives raw bytes, decodes them with the servicer's own
deserializer, and a body that does not parse ends the call with
INVALID_ARGUMENT ("request could not be decoded as tobe.v1.X") and one log line.

Streamed requests are decoded as the servicer iterates them; a bad one aborts the call from
inside that iteration, so a servicer must not swallow `grpc.aio.AbortError` raised there.
Servicers read requests by iterating, never with `context.read()` (which would see bytes).
Methods registered with raw-bytes deserializers (FaceGateway) are left alone.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

log = logging.getLogger(__name__)

Deserializer = Callable[[bytes], Any]

_FACTORIES = {
    "unary_unary": grpc.unary_unary_rpc_method_handler,
    "unary_stream": grpc.unary_stream_rpc_method_handler,
    "stream_unary": grpc.stream_unary_rpc_method_handler,
    "stream_stream": grpc.stream_stream_rpc_method_handler,
}


def message_name(deserializer: Deserializer) -> str:
    """`tobe.v1.X` for `X.FromString`; the callable's name for anything else."""
    descriptor = getattr(getattr(deserializer, "__self__", None), "DESCRIPTOR", None)
    full_name = getattr(descriptor, "full_name", None)
    return full_name if isinstance(full_name, str) else getattr(deserializer, "__name__", "?")


class _Decoder:
    """Decodes one method's requests; a failure aborts the call with INVALID_ARGUMENT."""

    def __init__(self, method: str, deserializer: Deserializer) -> None:
        self._method = method
        self._deserializer = deserializer
        self.message = f"request could not be decoded as {message_name(deserializer)}"

    async def decode(self, raw: bytes, context: grpc.aio.ServicerContext) -> Any:
        try:
            return self._deserializer(raw)
        except DecodeError:
            log.warning("refused %s: %s (%d bytes)", self._method, self.message, len(raw))
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, self.message)

    async def decode_stream(
        self, raw_requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        async for raw in raw_requests:
            yield await self.decode(raw, context)


def _decoding(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
    """A copy of `handler` that receives bytes and decodes them itself."""
    kind = ("stream" if handler.request_streaming else "unary") + "_" + (
        "stream" if handler.response_streaming else "unary"
    )
    behaviour = getattr(handler, kind)
    decoder = _Decoder(method, handler.request_deserializer)

    async def requests(raw: Any, context: grpc.aio.ServicerContext) -> Any:
        if handler.request_streaming:
            return decoder.decode_stream(raw, context)
        return await decoder.decode(raw, context)

    if inspect.isasyncgenfunction(behaviour):

        async def generate(raw: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            async for response in behaviour(await requests(raw, context), context):
                yield response

        replacement: Callable[..., Any] = generate
    else:

        async def call(raw: Any, context: grpc.aio.ServicerContext) -> Any:
            result = behaviour(await requests(raw, context), context)
            return await result if inspect.isawaitable(result) else result

        replacement = call
    return _FACTORIES[kind](
        replacement, request_deserializer=None, response_serializer=handler.response_serializer
    )


class DecodingInterceptor(grpc.aio.ServerInterceptor):
    """Answers undecodable requests with INVALID_ARGUMENT on every method of a server."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        return _decoding(handler, handler_call_details.method)
