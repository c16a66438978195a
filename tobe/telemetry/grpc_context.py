"""W3C trace context in gRPC metadata, on the SDK's propagator: a client interceptor that sends
it with every call, a server interceptor that continues it.

Not `opentelemetry-instrumentation-grpc`: its asyncio server interceptor breaks ToBe's
streaming calls (a servicer's streaming behaviour that is a coroutine writing with
`context.write` comes back from it as a coroutine where gRPC wants an async iterator), so
these two small interceptors carry the context instead, on unary calls: each gets a client
and a server span named after its method with the RPC semantic conventions' attributes. A
stream (`Subscribe`, a Hand's `Attach`) lives for hours and is left alone; what crosses it
carries its own context (a task offer's `trace_context`). Both exist only while tracing is on
(`tobe.telemetry.tracing`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from tobe import telemetry


def rpc_attributes(method: str) -> dict[str, telemetry.AttributeValue]:
    """`/tobe.v1.Mind/SendChat` as the RPC semantic conventions' attributes."""
    service, _, name = method.lstrip("/").partition("/")
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": name}


def _headers(metadata: Any) -> dict[str, str]:
    return {
        key: value
        for key, value in (metadata or ())
        if key in ("traceparent", "tracestate") and isinstance(value, str)
    }


def _continuing(handler: Any, method: str, headers: dict[str, str]) -> Any:
    """A copy of a unary call's handler that runs it in a server span continuing `headers`."""
    behaviour: Callable[..., Any] = handler.unary_unary
    attributes = rpc_attributes(method)

    async def call(request: Any, context: Any) -> Any:
        with (
            telemetry.resumed(headers),
            telemetry.span(method.lstrip("/"), kind="server", attributes=attributes),
        ):
            result = behaviour(request, context)
            return await result if inspect.isawaitable(result) else result

    return grpc.unary_unary_rpc_method_handler(
        call,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


class ContinuingInterceptor(grpc.aio.ServerInterceptor):
    """Runs every call's handler inside the trace context its metadata carries."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_streaming or handler.response_streaming:
            return handler  # a stream lives for hours: no span, and its handler untouched
        headers = _headers(handler_call_details.invocation_metadata)
        return _continuing(handler, handler_call_details.method, headers)


def _with_context(details: Any) -> Any:
    carried = telemetry.carrier()
    if not carried:
        return details
    metadata = grpc.aio.Metadata(*(details.metadata or ()), *carried.items())
    return details._replace(metadata=metadata)


class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        method = client_call_details.method
        name = method.decode() if isinstance(method, bytes) else method
        attributes = rpc_attributes(name)
        with telemetry.span(name.lstrip("/"), kind="client", attributes=attributes) as span:
            call = await continuation(_with_context(client_call_details), request)
            code = await call.code()  # the span lasts until the answer
            span.set_attribute("rpc.grpc.status_code", code.value[0])
            return call


def server_interceptors() -> list[grpc.aio.ServerInterceptor]:
    return [ContinuingInterceptor()] if telemetry.tracing() else []


def client_interceptors() -> list[grpc.aio.ClientInterceptor]:
    if not telemetry.tracing():
        return []
    return [_UnaryUnary()]
