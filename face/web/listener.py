"""The web server inside Face's own event loop: uvicorn on a socket Face binds itself.

Face binds `face.web.listen` before anything serves, so a port in use is a `WebBindError`
naming the setting, and port 0 reports the port picked. uvicorn runs as tasks of Face's loop
(no process, no thread, no signal handlers of its own: Face's `run_until_signal` stops it) and
shuts down gracefully: open sockets are closed 1012 (going away) and requests in flight get
the grace period. uvicorn is loaded by the first `WebServer`: a Face without the web client
binds nothing here and loads none of it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import ssl
from typing import TYPE_CHECKING

from face.web.frames import max_json_frame_bytes
from tobe.config import ServerTlsSettings
from tobe.runtime.ports import bind_problem, tcp_host_port
from tobe.runtime.server import BindError

if TYPE_CHECKING:
    from starlette.types import ASGIApp

log = logging.getLogger(__name__)

SETTING = "face.web.listen"


class WebBindError(BindError):
    """`face.web.listen` could not be bound."""


def bind(listen: str) -> socket.socket:
    """A listening-ready TCP socket bound to `listen` (`host:port`)."""
    parsed = tcp_host_port(listen)
    if parsed is None:
        raise WebBindError(listen, "the web client needs a TCP host:port address")
    problem = bind_problem(listen)
    if problem is not None:
        raise WebBindError(listen, problem)
    host, port = parsed
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, where = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise WebBindError(listen, str(exc)) from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(where)
    except OSError as exc:
        sock.close()
        raise WebBindError(listen, exc.strerror or str(exc)) from None
    return sock


def bound_address(listen: str, sock: socket.socket) -> str:
    """`listen` with the port actually bound (the one picked for port 0)."""
    return f"{listen.rsplit(':', 1)[0]}:{sock.getsockname()[1]}"


def is_loopback(listen: str) -> bool:
    parsed = tcp_host_port(listen)
    host = parsed[0] if parsed is not None else ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _client_cert_mode(tls: ServerTlsSettings) -> ssl.VerifyMode:
    if tls.require_client_cert:
        return ssl.CERT_REQUIRED
    return ssl.CERT_OPTIONAL if tls.client_ca_file is not None else ssl.CERT_NONE


class WebServer:
    """uvicorn serving `app` on `sock`; `tls` set (already checked) serves HTTPS and WSS."""

    def __init__(
        self,
        app: ASGIApp,
        sock: socket.socket,
        *,
        tls: ServerTlsSettings | None,
        max_frame_bytes: int,
        grace: float,
    ) -> None:
        import uvicorn

        from face.web.protocol import WebSocketProtocol

        self._socket = sock
        ca = tls.client_ca_file if tls is not None else None
        self._config = uvicorn.Config(
            app,
            ws=WebSocketProtocol,
            ws_max_size=max_json_frame_bytes(max_frame_bytes),
            lifespan="off",
            # Proxy headers count only from `face.web.trusted_proxies` (`face.web.proxies`),
            # not from any loopback peer as uvicorn's own default would have it.
            proxy_headers=False,
            # Face's logging stays as configured; requests are not logged one by one.
            log_config=None,
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=int(grace) or 1,
            ssl_certfile=tls.cert_file if tls is not None else None,
            ssl_keyfile=tls.key_file if tls is not None else None,
            ssl_ca_certs=ca,
            ssl_cert_reqs=_client_cert_mode(tls) if tls is not None else ssl.CERT_NONE,
        )
        self._server = uvicorn.Server(self._config)
        self._ticks: asyncio.Task[None] | None = None

    async def start(self) -> None:
        config = self._config
        config.load()
        self._server.lifespan = config.lifespan_class(config)
        await self._server.startup(sockets=[self._socket])
        self._ticks = asyncio.create_task(self._server.main_loop())

    async def stop(self) -> None:
        self._server.should_exit = True
        if self._ticks is not None:
            await self._ticks
        await self._server.shutdown(sockets=[self._socket])
