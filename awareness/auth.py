"""Awareness's check of the link token the Mind presents (`tobe.runtime.tokens` finds it).

The token is never logged.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import grpc

PROTECTED_PREFIX = "/tobe.v1.Awareness/"

Request = TypeVar("Request")
Response = TypeVar("Response")


def _bearer(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
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
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Request, Response] | None]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Request, Response] | None:
        handler = await continuation(details)
        if not details.method.startswith(PROTECTED_PREFIX) or handler is None:
            return handler
        presented = _bearer(details.invocation_metadata).encode()
        if hmac.compare_digest(presented, self._expected):
            return handler
        return _refusal(handler)


async def _deny(request: object, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    await context.abort(
        grpc.StatusCode.UNAUTHENTICATED,
        "missing or wrong Awareness service token (authorization: Bearer <token>)",
    )


def _refusal(
    handler: grpc.RpcMethodHandler[Request, Response],
) -> grpc.RpcMethodHandler[Request, Response]:
    factory = (
        # An aio stream handler may be a plain coroutine; it aborts before writing anything.
        grpc.unary_stream_rpc_method_handler
        if handler.response_streaming
        else grpc.unary_unary_rpc_method_handler
    )
    return factory(
        _deny,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
