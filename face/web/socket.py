"""The WebSocket transport of a client `Session` (`GET /ws`).

Same frames and rules as FaceGateway.Connect, as protobuf JSON text frames (`face.web.frames`).
The credential is the session cookie. An ending with a gRPC status closes the socket with code
4000 + the status number and the message as reason (4016 UNAUTHENTICATED, 4008
RESOURCE_EXHAUSTED "resync required", 4003 a malformed frame…); a clean end closes 1000; a
frame over the size limit is closed 1009 by the protocol layer itself.
"""

from __future__ import annotations

import logging

from starlette.websockets import WebSocket, WebSocketDisconnect

from face.commands import status_number
from face.errors import GatewayError
from face.session import ClientGone, Frames, Session, checked_frame, within
from face.web.api import NO_SESSION, SESSION_COOKIE, error
from face.web.frames import request_from_json, response_json
from face.web.origins import origin_allowed

log = logging.getLogger(__name__)

NORMAL_CLOSURE = 1000
STATUS_CLOSE_BASE = 4000
# A close frame's reason is at most 123 bytes of UTF-8.
MAX_REASON_BYTES = 123


def close_code(code: str) -> int:
    """The close code of a connection ending with the gRPC status named `code`."""
    return NORMAL_CLOSURE if code == "OK" else STATUS_CLOSE_BASE + status_number(code)


def close_reason(message: str) -> str:
    """`message` cut to what a close frame carries, never inside a character."""
    return message.encode()[:MAX_REASON_BYTES].decode("utf-8", "ignore")


class WebSocketSink:
    """Frames of one socket: JSON text with `seq`, and a closing code."""

    def __init__(self, websocket: WebSocket, write_timeout: float) -> None:
        self._websocket = websocket
        self._write_timeout = write_timeout

    async def write(self, seq: int, body: bytes) -> None:
        await self._websocket.send_text(response_json(seq, body))

    async def end(self, code: str, message: str) -> None:
        """Close with the status's code; a peer that does not read gets the close frame queued
        behind what it has not read (the protocol layer does not wait for it)."""
        closing = self._websocket.close(close_code(code), close_reason(message))
        try:
            if not await within(self._write_timeout, closing):
                log.info("close %s for a socket that does not read was dropped", code)
        except WebSocketDisconnect:
            pass


async def _frames(websocket: WebSocket) -> Frames:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            raise ClientGone()
        text = message.get("text")
        if text is None:
            raise GatewayError("INVALID_ARGUMENT", "malformed frame: frames are JSON text")
        yield checked_frame(request_from_json(text))


class SocketEndpoint:
    """Accepts a socket from an allowed origin and runs its session."""

    def __init__(self, session: Session, origins: list[str]) -> None:
        self._session = session
        self._origins = origins

    async def serve(self, websocket: WebSocket) -> None:
        if not origin_allowed(websocket.url.scheme, websocket.headers, self._origins):
            log.info("refused a WebSocket from origin %r", websocket.headers.get("origin"))
            refusal = error(403, "this origin may not connect; add it to face.web.origins")
            await websocket.send_denial_response(refusal)
            return
        await websocket.accept()
        sink = WebSocketSink(websocket, self._session.settings.write_timeout)
        try:
            token = websocket.cookies.get(SESSION_COOKIE, "")
            identity = await self._session.identify(token, NO_SESSION)
            await self._session.run(identity, _frames(websocket), sink)
        except GatewayError as exc:
            await sink.end(exc.code, exc.message)
        except WebSocketDisconnect:
            return
