"""The shared service token between the Mind and Awareness, and the server-side check.

Token source, first that is set: `awareness.token`, `awareness.token_file`, else
`<data_dir>/credentials/awareness.token`, created (mode 0600, atomically) on first use so a
Mind and an Awareness on one machine share it without setup. The token is never logged.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

from tobe.config import Settings

TOKEN_FILE_NAME = "awareness.token"
PROTECTED_PREFIX = "/tobe.v1.Awareness/"


class TokenUnavailable(RuntimeError):
    pass


def default_token_file(settings: Settings) -> Path:
    return settings.awareness.token_file or settings.credentials_dir / TOKEN_FILE_NAME


def load_token(settings: Settings, *, create: bool) -> str:
    """The service token; with `create`, the default file is made when missing."""
    if settings.awareness.token is not None:
        return settings.awareness.token.get_secret_value()
    path = default_token_file(settings)
    if create and settings.awareness.token_file is None and not path.exists():
        create_token_file(path)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise TokenUnavailable(f"the Awareness service token file {path} does not exist") from None
    if not token:
        raise TokenUnavailable(f"the Awareness service token file {path} is empty")
    return token


def create_token_file(path: Path) -> None:
    """A new random token at `path` (0600), unless a file is already there."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(prefix=".token.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
    finally:
        os.unlink(temp)


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
