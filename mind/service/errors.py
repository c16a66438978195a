"""Domain errors → gRPC status codes, mapped once for every Mind servicer method."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from mind.approvals import errors as approval_errors
from mind.conversation import errors
from mind.events.subscription import SnapshotRequired

_CODES: list[tuple[type[Exception], grpc.StatusCode]] = [
    (errors.InvalidInput, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.NotFound, grpc.StatusCode.NOT_FOUND),
    (errors.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (errors.NotAllowed, grpc.StatusCode.PERMISSION_DENIED),
    (errors.WrongState, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.ShuttingDown, grpc.StatusCode.UNAVAILABLE),
    (SnapshotRequired, grpc.StatusCode.FAILED_PRECONDITION),
    (approval_errors.ApprovalNotFound, grpc.StatusCode.NOT_FOUND),
    (approval_errors.ApprovalAlreadyDecided, grpc.StatusCode.FAILED_PRECONDITION),
    (approval_errors.InvalidDecision, grpc.StatusCode.INVALID_ARGUMENT),
    (ValueError, grpc.StatusCode.INVALID_ARGUMENT),
]

MAPPED = (errors.ConversationError, approval_errors.ApprovalError, SnapshotRequired, ValueError)

R = TypeVar("R")


def status_for(exc: Exception) -> grpc.StatusCode | None:
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code
    return None


async def _abort(context: grpc.aio.ServicerContext, exc: Exception) -> None:
    code = status_for(exc) or grpc.StatusCode.INTERNAL
    await context.abort(code, str(exc))


def unary(
    method: Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[R]],
) -> Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[R]]:
    @functools.wraps(method)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> R:
        try:
            return await method(self, request, context)
        except MAPPED as exc:
            await _abort(context, exc)
        raise AssertionError("unreachable: abort raises")

    return wrapper


def streaming(
    method: Callable[[Any, Any, grpc.aio.ServicerContext], AsyncIterator[R]],
) -> Callable[[Any, Any, grpc.aio.ServicerContext], AsyncIterator[R]]:
    @functools.wraps(method)
    async def wrapper(
        self: Any, request: Any, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[R]:
        try:
            async for item in method(self, request, context):
                yield item
        except MAPPED as exc:
            await _abort(context, exc)

    return wrapper
