"""Requests that are not valid protobuf, or hold an enum value their enum does not define,
end with INVALID_ARGUMENT, not with UNKNOWN or INTERNAL.

gRPC decodes a request before the servicer runs; a `DecodeError` there is logged with a
traceback and answered `UNKNOWN: Unexpected <class 'DecodeError'>`. `DecodingInterceptor`
takes decoding over: the method receives raw bytes, decodes them with the servicer's own
deserializer, and a body that does not parse ends the call with
INVALID_ARGUMENT ("request could not be decoded as tobe.v1.X") and one log line. A request
that decodes is then checked for undefined enum values (`tobe.runtime.enum_values`): one ends
the call the same way, its message naming the field ("decision: 99 is not a valid …").

Streamed requests are decoded as the servicer iterates them; a bad one aborts the call from
inside that iteration, so a servicer must not swallow `grpc.aio.AbortError` raised there.
Servicers read requests by iterating, never with `context.read()` (which would see bytes).
Methods registered with raw-bytes deserializers (FaceGateway, which checks its frames itself
with the same `undefined_enum`) are left alone.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from tobe.runtime.enum_values import undefined_enum

log = logging.getLogger(__name__)

Request = TypeVar("Request")
Response = TypeVar("Response")
# The context of a method registered by `_decoding`: its requests arrive as bytes.
RawContext = grpc.aio.ServicerContext[bytes, Any]

_FACTORIES = {
    "unary_unary": grpc.unary_unary_rpc_method_handler,
    "unary_stream": grpc.unary_stream_rpc_method_handler,
    "stream_unary": grpc.stream_unary_rpc_method_handler,
    "stream_stream": grpc.stream_stream_rpc_method_handler,
}


def message_name(deserializer: Callable[[bytes], object]) -> str:
    """`tobe.v1.X` for `X.FromString`; the callable's name for anything else."""
    descriptor = getattr(getattr(deserializer, "__self__", None), "DESCRIPTOR", None)
    full_name = getattr(descriptor, "full_name", None)
    return full_name if isinstance(full_name, str) else getattr(deserializer, "__name__", "?")


class _Decoder(Generic[Request]):
    """Decodes one method's requests; a failure aborts the call with INVALID_ARGUMENT."""

    def __init__(self, method: str, deserializer: Callable[[bytes], Request]) -> None:
        self._method = method
        self._deserializer = deserializer
        self.message = f"request could not be decoded as {message_name(deserializer)}"

    async def decode(self, raw: bytes, context: RawContext) -> Request:
        try:
            request = self._deserializer(raw)
        except DecodeError:
            log.warning("refused %s: %s (%d bytes)", self._method, self.message, len(raw))
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, self.message)
        problem = undefined_enum(request) if isinstance(request, Message) else None
        if problem is not None:
            log.warning("refused %s: %s", self._method, problem)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        return request

    async def decode_stream(
        self, raw_requests: AsyncIterator[bytes], context: RawContext
    ) -> AsyncIterator[Request]:
        async for raw in raw_requests:
            yield await self.decode(raw, context)


def _decoding(
    handler: grpc.RpcMethodHandler[Request, Response],
    deserializer: Callable[[bytes], Request],
    method: str,
) -> grpc.RpcMethodHandler[bytes, Response]:
    """A copy of `handler` that receives bytes and decodes them with `deserializer` itself."""
    kind = (
        ("stream" if handler.request_streaming else "unary")
        + "_"
        + ("stream" if handler.response_streaming else "unary")
    )
    # The servicer's own behaviour, unary or streaming, sync or async: called as gRPC would.
    behaviour: Callable[..., Any] = getattr(handler, kind)
    decoder = _Decoder(method, deserializer)

    async def requests(raw: Any, context: RawContext) -> Request | AsyncIterator[Request]:
        if handler.request_streaming:
            return decoder.decode_stream(raw, context)
        return await decoder.decode(raw, context)

    if inspect.isasyncgenfunction(behaviour):

        async def generate(raw: Any, context: RawContext) -> AsyncIterator[Response]:
            async for response in behaviour(await requests(raw, context), context):
                yield response

        replacement: Callable[..., object] = generate
    else:

        async def call(raw: Any, context: RawContext) -> Response:
            result: Response | Awaitable[Response] = behaviour(
                await requests(raw, context), context
            )
            return await result if inspect.isawaitable(result) else result

        replacement = call
    return _FACTORIES[kind](
        replacement, request_deserializer=None, response_serializer=handler.response_serializer
    )


class DecodingInterceptor(grpc.aio.ServerInterceptor):
    """Answers undecodable requests with INVALID_ARGUMENT on every method of a server."""

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Request, Response] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Request, Response] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        decoding = _decoding(handler, handler.request_deserializer, handler_call_details.method)
        # The interface keeps the request type of the continuation's handler; this one takes
        # the undecoded bytes in its place and decodes them itself.
        return decoding  # type: ignore[return-value]
