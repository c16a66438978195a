"""Security headers on every HTTP response of the web server.

The app is static files and a JSON API on its own origin: the content security policy allows
scripts, styles and connections to that origin only (images may also be `data:` and `blob:`
URLs, for pictures pasted into a message; the app's manifest and its service worker from it
too), no framing, no referrer, and API responses (the session, errors) are never cached.

A widget's page is the one thing the app frames: `widget-frame.html`, shown in a sandboxed
iframe (`widgets.js`), is framed by the app only, runs sandboxed even when opened on its own
(the CSP's `sandbox allow-scripts`: an opaque origin, no cookies, no API), and may run the
page's inline scripts and styles but reach no network (`default-src 'none'`; images only as
`data:` URLs).
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; manifest-src 'self'; worker-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'; frame-src 'self'"
)
WIDGET_FRAME = "/widget-frame.html"
WIDGET_FRAME_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; font-src data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'self'; sandbox allow-scripts"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
    "Cross-Origin-Opener-Policy": "same-origin",
}
# Browsers remember HTTPS-only for this long (one year) once they saw it over TLS.
STRICT_TRANSPORT_SECURITY = "max-age=31536000"


class SecurityHeaders:
    """ASGI middleware adding the headers to each response start."""

    def __init__(self, app: ASGIApp, *, tls: bool) -> None:
        self._app = app
        self._headers = dict(SECURITY_HEADERS)
        if tls:
            self._headers["Strict-Transport-Security"] = STRICT_TRANSPORT_SECURITY

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        api = path.startswith("/api/")
        frame = path == WIDGET_FRAME

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self._headers.items():
                    headers[name] = value
                if api:
                    headers["Cache-Control"] = "no-store"
                if frame:
                    headers["Content-Security-Policy"] = WIDGET_FRAME_POLICY
                    headers["X-Frame-Options"] = "SAMEORIGIN"
            await send(message)

        await self._app(scope, receive, send_with_headers)
