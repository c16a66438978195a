"""The web client's JSON API: sign in with a pairing code, sign out, and who is signed in.

The session is the `tobe_session` cookie, which holds a client credential of its own (made by
redeeming a pairing code): HttpOnly so that no script reads it, SameSite=Strict so that no
other site's request carries it, Secure under TLS. Errors are `{"error": "..."}` with the HTTP
status that says what to do; neither a code nor a token ever reaches a log line.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from face.errors import FaceUnavailable, GatewayError
from face.session import Session
from face.web.attempts import MinuteLimit
from face.web.origins import origin_allowed

log = logging.getLogger(__name__)

SESSION_COOKIE = "tobe_session"
# Browsers cap a cookie's lifetime at 400 days; a device stays signed in until signed out.
SESSION_MAX_AGE = 400 * 24 * 3600
MAX_BODY_BYTES = 4096
MAX_CODE_CHARS = 64
MAX_DEVICE_CHARS = 128
MAX_DEVICE_ID_CHARS = 64
DEFAULT_DEVICE = "web browser"
NO_SESSION = "not signed in: open a pairing link (`tobe admin pair`, or /pair in chat)"
# HTTP status for the Mind's answers to a redemption or a session check.
HTTP_STATUS = {
    "INVALID_ARGUMENT": 400,
    "UNAUTHENTICATED": 401,
    "NOT_FOUND": 410,
    "UNAVAILABLE": 503,
    "UNIMPLEMENTED": 501,
}
UNKNOWN_CODE = (
    "this pairing code is unknown, used or expired: make a new one (`tobe admin pair`, or "
    "/pair in chat)"
)


class BadRequest(Exception):
    """The request itself is wrong; `status` and the message say how."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _mind_error(exc: GatewayError) -> JSONResponse:
    if isinstance(exc, FaceUnavailable):
        return error(503, exc.message)
    if exc.code == "UNAVAILABLE":
        return error(503, f"the Mind is unreachable ({exc.message}); try again shortly")
    return error(HTTP_STATUS.get(exc.code, 502), exc.message)


async def _small_json(request: Request) -> dict[str, Any]:
    """The request's JSON object, read up to MAX_BODY_BYTES."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise BadRequest(413, f"the request body is over {MAX_BODY_BYTES} bytes")
    try:
        parsed = json.loads(body)
    except ValueError:
        raise BadRequest(400, "the request body is not JSON") from None
    if not isinstance(parsed, dict):
        raise BadRequest(400, 'the request body must be a JSON object: {"code": "..."}')
    return parsed


def _string(body: dict[str, Any], name: str, longest: int, default: str = "") -> str:
    value = body.get(name, default)
    if not isinstance(value, str) or len(value) > longest:
        raise BadRequest(400, f"`{name}` must be a string of at most {longest} characters")
    return value


class WebApi:
    """The endpoints; `tls` adds `Secure` to the cookie."""

    def __init__(self, session: Session, *, tls: bool, origins: list[str], attempts: int) -> None:
        self._session = session
        self._tls = tls
        self._origins = origins
        self._failures = MinuteLimit(attempts)

    def _foreign(self, request: Request) -> JSONResponse | None:
        if origin_allowed(request.url.scheme, request.headers, self._origins):
            return None
        log.info("refused a %s %s from a foreign origin", request.method, request.url.path)
        return error(403, "this origin may not use the API; add it to face.web.origins")

    async def pair(self, request: Request) -> Response:
        """Redeem a pairing code: the new credential becomes this browser's session cookie."""
        refused = self._foreign(request)
        if refused is not None:
            return refused
        address = request.client.host if request.client is not None else ""
        wait = self._failures.blocked(address)
        if wait > 0:
            return error(
                429,
                f"too many failed pairing attempts; try again in {int(wait) + 1} s",
                headers={"Retry-After": str(int(wait) + 1)},
            )
        try:
            body = await _small_json(request)
            code = _string(body, "code", MAX_CODE_CHARS).strip()
            device = _string(body, "device", MAX_DEVICE_CHARS).strip() or DEFAULT_DEVICE
            # The browser's own stable id: pairing it again signs its earlier session out.
            device_id = _string(body, "device_id", MAX_DEVICE_ID_CHARS).strip()
            if not code:
                raise BadRequest(400, "`code` is required: the code of a pairing link")
        except BadRequest as exc:
            self._failures.count(address)
            return error(exc.status, exc.message)
        try:
            redeemed = await self._session.mind.redeem_pairing_code(code, device, device_id)
        except GatewayError as exc:
            if exc.code in ("INVALID_ARGUMENT", "NOT_FOUND"):
                self._failures.count(address)
            if exc.code == "NOT_FOUND":
                return error(410, UNKNOWN_CODE)
            return _mind_error(exc)
        log.info(
            "device %r paired as %s (credential %s)",
            device,
            redeemed.principal,
            redeemed.credential_id,
        )
        response = Response(status_code=204)
        response.set_cookie(
            SESSION_COOKIE,
            redeemed.token,
            max_age=SESSION_MAX_AGE,
            path="/",
            secure=self._tls,
            httponly=True,
            samesite="strict",
        )
        return response

    async def logout(self, request: Request) -> Response:
        """Revoke this browser's credential and forget the cookie."""
        refused = self._foreign(request)
        if refused is not None:
            return refused
        token = request.cookies.get(SESSION_COOKIE, "")
        if token:
            try:
                await self._session.mind.sign_out(token)
            except GatewayError as exc:
                if exc.code != "UNAUTHENTICATED":
                    return _mind_error(exc)
        response = Response(status_code=204)
        response.delete_cookie(
            SESSION_COOKIE, path="/", secure=self._tls, httponly=True, samesite="strict"
        )
        return response

    async def whoami(self, request: Request) -> Response:
        """The signed-in principal and its scopes; 401 without a valid session."""
        token = request.cookies.get(SESSION_COOKIE, "")
        try:
            identity = await self._session.identify(token, NO_SESSION)
        except GatewayError as exc:
            return _mind_error(exc)
        return JSONResponse({"principal": identity.principal, "scopes": list(identity.scopes)})
