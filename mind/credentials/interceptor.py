"""gRPC server interceptor: bearer-token authentication for every non-public method.

Calls carry `authorization: Bearer <token>` metadata. Missing, malformed, unknown, revoked or
expired tokens end the call with UNAUTHENTICATED before the servicer runs; the token is never
logged nor echoed. Otherwise the servicer reads the caller with `current_identity()`, which works
for unary and streaming methods alike. Health checks and reflection stay public.

A response-streaming call lives in `LiveCalls` under its credential while it runs: revoking
the credential cancels the call and it ends with UNAUTHENTICATED ("credential ... was revoked").
The call writes its responses itself (`context.write`), so the cancel always lands inside the
call, wherever it waits. A unary call is not cut: it authenticated before the revocation and
ends with its own answer (cutting it could hide a change it already committed); the store
refuses every later call.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

import grpc

from mind.credentials import Identity
from mind.credentials.live_calls import CallCredentialRevoked, LiveCalls, revoked_message
from tobe.mind_answers import AUTHENTICATION_UNAVAILABLE

log = logging.getLogger(__name__)

PUBLIC_METHODS = frozenset(
    {
        "/grpc.health.v1.Health/",
        "/grpc.reflection.v1alpha.ServerReflection/",
        "/grpc.reflection.v1.ServerReflection/",
    }
)
MISSING = "missing credentials: send metadata 'authorization: Bearer <token>'"
MALFORMED = "malformed authorization metadata: expected exactly one 'Bearer <token>'"
REJECTED = "invalid, revoked or expired credential"
BACKEND_FAILED = AUTHENTICATION_UNAVAILABLE

Request = TypeVar("Request")
Response = TypeVar("Response")
# Quoted: grpc's RpcMethodHandler is generic only in its type stubs.
Handler: TypeAlias = "grpc.RpcMethodHandler[Request, Response]"
Context = grpc.aio.ServicerContext[Request, Response]

_identity: contextvars.ContextVar[Identity] = contextvars.ContextVar("tobe_identity")

Authenticate = Callable[[str], Awaitable[Identity | None]]


def current_identity() -> Identity:
    """The authenticated caller of the call being served."""
    try:
        return _identity.get()
    except LookupError:
        raise RuntimeError("no authenticated identity: not inside an authenticated call") from None


def bearer_token(metadata: tuple[tuple[str, str | bytes], ...] | None) -> str | None:
    """The token of the only `authorization: Bearer` entry; "" when present but malformed."""
    values = [value for key, value in metadata or () if key.lower() == "authorization"]
    if not values:
        return None
    if len(values) != 1 or not isinstance(values[0], str):
        return ""
    scheme, _, token = values[0].strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return ""
    return token


def _kind(handler: Handler[Any, Any]) -> str:
    incoming = "stream" if handler.request_streaming else "unary"
    outgoing = "stream" if handler.response_streaming else "unary"
    return f"{incoming}_{outgoing}"


def _with_identity(
    handler: Handler[Request, Response], identity: Identity
) -> Handler[Request, Response]:
    """A copy of unary-response `handler` that runs with `identity` as the current identity."""
    kind = _kind(handler)
    # The servicer's own behaviour, sync or async: called as gRPC would call it.
    behaviour: Callable[..., Any] = getattr(handler, kind)

    async def call(request: object, context: Context[Request, Response]) -> Response:
        token = _identity.set(identity)
        try:
            result: Response | Awaitable[Response] = behaviour(request, context)
            return await result if inspect.isawaitable(result) else result
        finally:
            _identity.reset(token)

    return _replace(handler, kind, call)


def _live_stream(
    handler: Handler[Request, Response], identity: Identity, live: LiveCalls
) -> Handler[Request, Response]:
    """A copy of response-streaming `handler` that runs with `identity` as the current
    identity, registered in `live` so that revoking its credential ends it UNAUTHENTICATED."""
    kind = _kind(handler)
    # An async generator of responses, or a coroutine that writes them through `context`.
    behaviour: Callable[..., Any] = getattr(handler, kind)

    async def stream(request: object, context: Context[Request, Response]) -> None:
        task = asyncio.current_task()
        assert task is not None, "gRPC runs every call in a task"
        # The headers go out before the call can be cut: a cut inside the first write would
        # leave them unmarked as sent, and the UNAUTHENTICATED status that sends them again
        # is refused by gRPC core (too many operations), so the call would never end.
        await context.send_initial_metadata(())
        try:
            call = live.register(identity.credential_id, task.cancel)
        except CallCredentialRevoked as exc:
            log.info("refused %s's stream: %s", identity.principal, exc)
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
        token = _identity.set(identity)
        try:
            if inspect.isasyncgenfunction(behaviour):
                async with contextlib.aclosing(behaviour(request, context)) as responses:
                    async for response in responses:
                        await context.write(response)
            else:
                await behaviour(request, context)
        except asyncio.CancelledError:
            if not call.revoked:
                raise  # the peer went away or the server is stopping
            task.uncancel()
            message = revoked_message(call.credential_id)
            log.info("ended %s's stream: %s", identity.principal, message)
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        finally:
            live.unregister(call)
            _identity.reset(token)

    return _replace(handler, kind, stream)


def _refusal(
    handler: Handler[Request, Response], code: grpc.StatusCode, message: str
) -> Handler[Request, Response]:
    """A handler of the same shape as `handler` that ends the call with `code`."""

    async def refuse(_request: object, context: Context[Request, Response]) -> None:
        await context.abort(code, message)

    return _replace(handler, _kind(handler), refuse)


_FACTORIES = {
    "unary_unary": grpc.unary_unary_rpc_method_handler,
    "unary_stream": grpc.unary_stream_rpc_method_handler,
    "stream_unary": grpc.stream_unary_rpc_method_handler,
    "stream_stream": grpc.stream_stream_rpc_method_handler,
}


def _replace(
    handler: Handler[Request, Response], kind: str, behaviour: Callable[..., object]
) -> Handler[Request, Response]:
    return _FACTORIES[kind](
        behaviour,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Authenticates every call outside `public_methods` (prefixes of full method names).

    `live` holds its streaming calls; the server's owner revokes through it (a private one
    when none is given).
    """

    def __init__(
        self,
        authenticate: Authenticate,
        *,
        live: LiveCalls | None = None,
        public_methods: frozenset[str] = PUBLIC_METHODS,
    ) -> None:
        self._authenticate = authenticate
        self.live = live if live is not None else LiveCalls()
        self._public = tuple(public_methods)

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[Handler[Request, Response] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler[Request, Response] | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(self._public):
            return handler
        token = bearer_token(handler_call_details.invocation_metadata)
        if not token:
            message = MISSING if token is None else MALFORMED
            log.info("refused %s: %s", method, message)
            return _refusal(handler, grpc.StatusCode.UNAUTHENTICATED, message)
        try:
            identity = await self._authenticate(token)
        except Exception as exc:  # the store is down; never let the token reach a traceback
            log.error("authentication backend failed for %s: %s", method, type(exc).__name__)
            return _refusal(handler, grpc.StatusCode.UNAVAILABLE, BACKEND_FAILED)
        if identity is None:
            log.info("refused %s: %s", method, REJECTED)
            return _refusal(handler, grpc.StatusCode.UNAUTHENTICATED, REJECTED)
        if handler.response_streaming:
            return _live_stream(handler, identity, self.live)
        return _with_identity(handler, identity)
