"""The web server's routes: the app's static files, the JSON API, the WebSocket, a health check.

GET  /               the web app (`face/web/static/`)
GET  /ws             a client connection (`face.web.socket`)
POST /api/pair       sign in with a pairing code (`face.web.api`)
POST /api/logout     sign out
GET  /api/session    who is signed in
GET  /v1/models, POST /v1/chat/completions
                     the OpenAI-compatible chat endpoint (`face.openai`), unless turned off
GET  /healthz        `ok` while Face serves (`tobe health --all`, container checks); 503
                     `not serving: <why>` while it cannot (`EventFeed.trouble`)
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from face.openai.routes import openai_routes
from face.session import Session
from face.web.api import WebApi
from face.web.headers import SecurityHeaders
from face.web.proxies import ProxyHeaders, TrustedProxies, parse_networks
from face.web.socket import SocketEndpoint
from tobe.config import WebSettings
from tobe.runtime.web_health import NOT_SERVING_PREFIX

STATIC_DIR = Path(__file__).parent / "static"


def health_route(session: Session) -> Route:
    """`GET /healthz`: the same answer as Face's gRPC health, for HTTP-only probes."""

    async def healthz(request: Request) -> Response:
        trouble = session.feed.trouble
        if trouble:
            return PlainTextResponse(NOT_SERVING_PREFIX + trouble, status_code=503)
        return PlainTextResponse("ok")

    return Route("/healthz", healthz, methods=["GET"])


def web_app(session: Session, settings: WebSettings, *, tls: bool) -> Starlette:
    api = WebApi(
        session,
        tls=tls,
        origins=settings.origins,
        attempts=settings.pair_attempts_per_minute,
    )
    socket = SocketEndpoint(session, settings.origins)
    routes = [
        health_route(session),
        Route("/api/pair", api.pair, methods=["POST"]),
        Route("/api/logout", api.logout, methods=["POST"]),
        Route("/api/session", api.whoami, methods=["GET"]),
        WebSocketRoute("/ws", socket.serve),
    ]
    if settings.openai_api:
        routes += openai_routes(session, settings.openai_requests_per_minute)
    routes.append(Mount("/", app=StaticFiles(directory=STATIC_DIR, html=True)))
    proxies = TrustedProxies(parse_networks(settings.trusted_proxies))
    middleware = [
        Middleware(ProxyHeaders, proxies=proxies),
        Middleware(SecurityHeaders, tls=tls),
    ]
    return Starlette(routes=routes, middleware=middleware)
