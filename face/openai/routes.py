"""The OpenAI-compatible endpoint on the Face's web server, for the chat apps people run.

GET  /v1/models             the agent's profiles, as models
POST /v1/chat/completions   the last user message as a turn of a conversation; the reply
                            streamed as server-sent chunks (`stream: true`) or whole

The bearer token is a client credential with the `chat` scope, the same a `tobe chat` or any
Face client holds; each request runs as an in-process Face connection (`face.openai.local`), so
scopes, revocation and what the connection may see are the Face's own. Every reply carries the
conversation's key in `X-ToBe-Conversation`. A request whose client goes away before its run
ends cancels the run, as a chat app's "stop" button means.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from face.connection import Identity
from face.errors import FaceUnavailable, GatewayError
from face.openai.local import LocalConnection
from face.openai.turn import (
    CONVERSATION_HEADER,
    TurnProgress,
    profile_names,
    resolve_conversation,
    tell_turn,
)
from face.openai.wire import (
    STREAM_END,
    BadRequest,
    ChatRequest,
    chunk,
    completion,
    model_list,
    parse_chat_request,
)
from face.session import Session
from face.web.attempts import MinuteLimit
from tobe.scopes import CHAT
from tobe.v1 import mind_pb2

log = logging.getLogger(__name__)

CLIENT_NAME = "openai-compatible endpoint"
# A request body holds the person's message and at most a few images as data URLs.
MAX_BODY_BYTES = 64 * 1024 * 1024
# A streamed reply with nothing to tell (a tool runs, an approval waits) sends an SSE comment
# this often, so that proxies (nginx cuts a silent stream after 60 s) keep it open.
KEEPALIVE_SECONDS = 15.0
KEEPALIVE = ": keep-alive\n\n"
# How long cancelling a run whose client went away may take.
CANCEL_TIMEOUT = 5.0
_HTTP_STATUS = {
    "INVALID_ARGUMENT": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "FAILED_PRECONDITION": 409,
    "RESOURCE_EXHAUSTED": 429,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
_ERROR_CODES = {401: "invalid_api_key", 403: "insufficient_scope", 503: "unavailable"}


def openai_routes(session: Session, requests_per_minute: int) -> list[Route]:
    endpoint = OpenAiEndpoint(session, MinuteLimit(requests_per_minute))
    return [
        Route("/v1/models", endpoint.models, methods=["GET"]),
        Route("/v1/chat/completions", endpoint.chat_completions, methods=["POST"]),
    ]


def _refusal(exc: BadRequest, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


def _from_gateway(exc: GatewayError) -> BadRequest:
    status = 503 if isinstance(exc, FaceUnavailable) else _HTTP_STATUS.get(exc.code, 502)
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return BadRequest(status, exc.message, code=_ERROR_CODES.get(status, ""), kind=kind)


class OpenAiEndpoint:
    def __init__(self, session: Session, requests: MinuteLimit) -> None:
        self._session = session
        self._requests = requests

    async def _identity(self, request: Request) -> Identity:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise BadRequest(
                401,
                "send a client credential as `Authorization: Bearer <token>` "
                "(`tobe admin credentials create --kind client --principal NAME --scope chat`)",
                code="invalid_api_key",
            )
        try:
            identity = await self._session.identify(token.strip(), "no credential")
        except GatewayError as exc:
            raise _from_gateway(exc) from exc
        if CHAT not in identity.scopes:
            raise BadRequest(
                403,
                f"this credential lacks the `{CHAT}` scope, which chatting needs",
                code="insufficient_scope",
            )
        return identity

    async def models(self, request: Request) -> Response:
        try:
            identity = await self._identity(request)
            async with LocalConnection(self._session, identity, CLIENT_NAME) as connection:
                profiles = await profile_names(connection)
        except BadRequest as exc:
            return _refusal(exc)
        except GatewayError as exc:
            return _refusal(_from_gateway(exc))
        return JSONResponse(model_list(profiles))

    async def chat_completions(self, request: Request) -> Response:
        try:
            identity = await self._identity(request)
            wait = self._requests.blocked(identity.credential_id)
            if wait > 0:
                retry = str(int(wait) + 1)
                limited = BadRequest(
                    429,
                    f"too many chat completions from this credential; try again in {retry} s",
                    code="rate_limit_exceeded",
                    kind="rate_limit_error",
                )
                return _refusal(limited, {"Retry-After": retry})
            self._requests.count(identity.credential_id)
            chat = parse_chat_request(await _body(request))
        except BadRequest as exc:
            return _refusal(exc)
        connection = LocalConnection(self._session, identity, CLIENT_NAME)
        try:
            await connection.__aenter__()
        except GatewayError as exc:
            return _refusal(_from_gateway(exc))
        key = ""
        try:
            if chat.model not in {p.name for p in await profile_names(connection)}:
                raise BadRequest(
                    404,
                    f"the model {chat.model!r} is none of the agent's profiles (GET /v1/models)",
                    code="model_not_found",
                )
            header = request.headers.get(CONVERSATION_HEADER, "").strip()
            key, after_id = await resolve_conversation(connection, identity.principal, chat, header)
        except (BadRequest, GatewayError) as exc:
            await connection.__aexit__()
            refusal = exc if isinstance(exc, BadRequest) else _from_gateway(exc)
            headers = {CONVERSATION_HEADER: key} if key else None
            return _refusal(refusal, headers)
        idempotency_key = request.headers.get("idempotency-key", "") or uuid.uuid4().hex
        turn = _Turn(connection, key, after_id, chat, idempotency_key, self._web_link(key))
        headers = {CONVERSATION_HEADER: key}
        if chat.stream:
            return StreamingResponse(
                turn.stream(lambda: _disconnected(request)),
                media_type="text/event-stream",
                headers=headers,
            )
        try:
            text = await turn.whole()
        except GatewayError as exc:
            return _refusal(_from_gateway(exc), headers)
        return JSONResponse(completion(turn.id, chat.model, text, turn.created), headers=headers)

    def _web_link(self, key: str) -> str:
        base = self._session.web_base_url
        return f"{base}#conversation={key}" if base else ""


class _Turn:
    """One request's turn, told whole or as chunks; closes its connection when done."""

    def __init__(
        self,
        connection: LocalConnection,
        key: str,
        after_id: int,
        chat: ChatRequest,
        idempotency_key: str,
        web_link: str,
    ) -> None:
        self._connection = connection
        self._key = key
        self._after_id = after_id
        self._chat = chat
        self._idempotency_key = idempotency_key
        self._web_link = web_link
        self._progress = TurnProgress()
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def _told(self) -> AsyncIterator[str]:
        return tell_turn(
            self._connection,
            self._key,
            self._after_id,
            self._chat,
            self._idempotency_key,
            self._web_link,
            self._progress,
        )

    async def whole(self) -> str:
        try:
            return "".join([piece async for piece in self._told()])
        finally:
            await self._finish()

    async def stream(self, gone: Callable[[], Awaitable[object]]) -> AsyncIterator[str]:
        """The turn as server-sent chunks; when `gone` returns (the client went away), the
        turn stops there and its run is cancelled."""
        model = self._chat.model
        watcher: asyncio.Future[object] = asyncio.ensure_future(gone())
        told = self._told()
        following: asyncio.Future[object] | None = None
        try:
            yield chunk(self.id, model, self.created, {"role": "assistant", "content": ""})
            while True:
                following = following or asyncio.ensure_future(anext(told))
                await asyncio.wait(
                    {following, watcher},
                    timeout=KEEPALIVE_SECONDS,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if watcher.done():
                    return
                if not following.done():
                    yield KEEPALIVE
                    continue
                try:
                    piece = str(following.result())
                except StopAsyncIteration:
                    break
                except GatewayError as exc:
                    note = f"\n\n(The turn could not go on: {exc.message})"
                    yield chunk(self.id, model, self.created, {"content": note})
                    break
                following = None
                yield chunk(self.id, model, self.created, {"content": piece})
            yield chunk(self.id, model, self.created, {}, finish="stop")
            yield STREAM_END
        finally:
            watcher.cancel()
            if following is not None:
                following.cancel()
            # Not awaited here: this generator may be closing under the server's cancellation,
            # which would cancel the clean-up too.
            _detached(self._finish())

    async def _finish(self) -> None:
        """Close the connection; a run left going (its client went away) is cancelled first."""
        if self._progress.run_id and not self._progress.ended:
            await _quietly(self._cancel)
        await _quietly(self._connection.__aexit__)

    async def _cancel(self) -> None:
        log.info("the client of run %s went away: cancelling it", self._progress.run_id)
        await self._connection.mind(
            cancel_run=mind_pb2.CancelRunRequest(conversation_key=self._key)
        )


_cleanups: set[asyncio.Task[None]] = set()


def _detached(cleanup: Coroutine[Any, Any, None]) -> None:
    """Run `cleanup` in a task of its own, kept until it ends."""
    task = asyncio.get_running_loop().create_task(cleanup)
    _cleanups.add(task)
    task.add_done_callback(_cleanups.discard)


async def _quietly(step: Callable[[], Awaitable[object]]) -> None:
    """Run a clean-up step within a bound; its errors are only logged."""
    try:
        await asyncio.wait_for(step(), CANCEL_TIMEOUT)
    except Exception as exc:  # clean-up must not mask the ending
        log.info("clean-up after a chat completion: %s", exc)


async def _disconnected(request: Request) -> None:
    """Returns once the client has gone away (its request body was read before)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _body(request: Request) -> bytes:
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > MAX_BODY_BYTES:
            raise BadRequest(413, f"the request body is over {MAX_BODY_BYTES} bytes")
    return bytes(body)
