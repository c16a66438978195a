"""uvicorn's WebSocket protocol, except that a close never waits for the peer to read.

uvicorn holds every outgoing message, the close frame included, until the transport's write
buffer drains. For a client cut off because it does not read, that close would never leave:
the socket would stay open, holding its buffer. Here a close on a paused transport is queued at
once behind the unread frames (one small frame more), so a client that reads again learns why
it was cut off (4008 "resync required"), and the transport is aborted if the peer has not
answered the close within the protocol's close timeout.
"""

from __future__ import annotations

from uvicorn._types import ASGISendEvent, WebSocketCloseEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


class WebSocketProtocol(WebSocketsSansIOProtocol):
    async def send(self, message: ASGISendEvent) -> None:
        if message["type"] == "websocket.close" and self._open_but_paused():
            self._close_now(message)
            return
        await super().send(message)

    def _open_but_paused(self) -> bool:
        return (
            self.handshake_complete
            and self.initial_response is None
            and not self.close_sent
            and not self.disconnected
            and not self.writable.is_set()
            and not self.transport.is_closing()
        )

    def _close_now(self, message: WebSocketCloseEvent) -> None:
        code = message.get("code", 1000)
        reason = message.get("reason") or ""
        self.queue.put_nowait({"type": "websocket.disconnect", "code": code, "reason": reason})
        self.conn.send_close(code, reason)
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.close_sent = True
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()
        self.close_timer = self.loop.call_later(self.close_timeout, self.transport.abort)
