"""Awareness's check of the link token the Mind presents (`tobe.runtime.tokens` finds it).

The token is never logged.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

PROTECTED_PREFIX = "/tobe.v1.Awareness/"


def _bearer(metadata: Any) -> str:
    for key, value in metadata or ():
        if key == "authorization" and isinstance(value, str) and value.startswith("Bearer "):
            return value.removeprefix("Bearer ")
    return ""


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """Refuses Awareness calls without the service token; health and reflection stay public."""

    def __init__(self, token: str) -> None:
        self._expected = token.encode()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if not details.method.startswith(PROTECTED_PREFIX) or handler is None:
            return handler
        presented = _bearer(details.invocation_metadata).encode()
        if hmac.compare_digest(presented, self._expected):
            return handler
        return _refusal(handler)


async def _deny(request: Any, context: grpc.aio.ServicerContext) -> None:
    await context.abort(
        grpc.StatusCode.UNAUTHENTICATED,
        "missing or wrong Awareness service token (authorization: Bearer <token>)",
    )


def _refusal(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    kwargs = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.response_streaming:
        # An aio stream handler may be a plain coroutine; it aborts before writing anything.
        return grpc.unary_stream_rpc_method_handler(_deny, **kwargs)
    return grpc.unary_unary_rpc_method_handler(_deny, **kwargs)
