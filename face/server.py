"""Wiring of the Face process: `build` assembles the Mind client (a channel per Mind address),
the shared event feed and the gateway servicer; `serve` runs them on the gRPC server, and the
web client on its own HTTP listener (`face.web`) in the same event loop, until SIGTERM or
SIGINT. Face's health is SERVING only while its feed from the Mind is live
(`EventFeed.trouble` says why not).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from face.feed import EventFeed
from face.mind_client import MindClient, MindTarget
from face.projection import AdmissionModes
from face.servicer import SERVICE_NAME, FaceGatewayServicer
from face.web.listener import WebServer, bind, bound_address, is_loopback
from tobe.config import Settings
from tobe.runtime.publishing import published_address
from tobe.runtime.server import GrpcServer, ServiceSpec, run_until_signal, start_server
from tobe.runtime.tls import ServerTls, TlsConfigError, client_tls, server_tls, setting_names
from tobe.runtime.tokens import token_file
from tobe.runtime.web_url import web_base_url

log = logging.getLogger(__name__)

# Frames sent to clients (snapshots, history pages) may be larger than what clients may send.
MAX_SEND_BYTES = 16 * 1024 * 1024
STOP_GRACE = 3.0


class FaceConfigError(RuntimeError):
    """Face cannot start with this configuration; the message says what to fix."""


def mind_token(settings: Settings) -> str:
    """Face's service credential: `face.mind_token`, else `<credentials_dir>/face.token`."""
    if settings.face.mind_token is not None:
        return settings.face.mind_token.get_secret_value()
    path = token_file(settings.credentials_dir, "face")
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise FaceConfigError(
            f"no credential for the Mind: set TOBE_FACE__MIND_TOKEN or create {path} "
            "(`tobe up` does this; or `tobe admin credentials create --kind service "
            "--scope gateway`)"
        ) from None


@dataclass
class Gateway:
    """A Face: its one client of the Mind, the feed fanned out to connections, the servicer."""

    settings: Settings
    mind: MindClient
    feed: EventFeed
    servicer: FaceGatewayServicer
    # TLS on a TCP `face.listen`; None serves plaintext.
    tls: ServerTls | None = None
    # HTTPS and WSS on `face.web.listen` (its settings already checked).
    web_tls: bool = False


def build(settings: Settings) -> Gateway:
    """Assemble a Face; nothing connects until `serve`."""
    config = settings.face
    try:
        tls = server_tls(config.tls, "face.tls")
        web_tls = config.web.enabled and server_tls(config.web.tls, "face.web.tls") is not None
        names = setting_names("face.mind_tls")
        minds = [MindTarget(*client_tls(config.mind_tls, mind, names)) for mind in config.minds]
    except TlsConfigError as exc:
        raise FaceConfigError(str(exc)) from None
    mind = MindClient(minds, mind_token(settings), max_send_bytes=config.max_frame_bytes)
    feed = EventFeed(mind, AdmissionModes())
    servicer = FaceGatewayServicer(mind, feed, config)
    return Gateway(settings, mind, feed, servicer, tls, web_tls)


async def _mirror_health(feed: EventFeed, server: GrpcServer) -> None:
    """Face's health follows its feed: SERVING while live, else NOT_SERVING saying why."""
    while True:
        feed.trouble_changed.clear()
        trouble = feed.trouble
        await server.set_serving(not trouble, trouble)
        await feed.trouble_changed.wait()


async def serve(gateway: Gateway) -> None:
    """Serve FaceGateway on `face.listen` and the web client on `face.web.listen` (unless
    disabled), both published in the runtime file, and follow the Mind until SIGTERM or
    SIGINT; BindError when `face.listen` cannot be bound, WebBindError for `face.web.listen`
    (checked first: a failure leaves nothing serving)."""
    settings = gateway.settings.face
    web_socket = bind(settings.web.listen) if settings.web.enabled else None
    try:
        server = await start_server(
            [ServiceSpec(SERVICE_NAME, gateway.servicer.register)],
            [settings.listen],
            max_message_bytes=MAX_SEND_BYTES,
            max_receive_bytes=settings.max_frame_bytes,
            serving=False,
            tls=gateway.tls,
            probe_listen=settings.probe_listen,
        )
    except BaseException:
        if web_socket is not None:
            web_socket.close()
        raise
    web: WebServer | None = None
    web_address = ""
    if web_socket is not None:
        from face.web.app import web_app  # Starlette and uvicorn: only with the web client

        web_address = bound_address(settings.web.listen, web_socket)
        session = gateway.servicer.session
        session.web_base_url = web_base_url(
            web_address, tls=gateway.web_tls, public_url=settings.web.public_url
        )
        web_tls = settings.web.tls if gateway.web_tls else None
        web = WebServer(
            web_app(session, settings.web, tls=gateway.web_tls),
            web_socket,
            tls=web_tls,
            max_frame_bytes=settings.max_frame_bytes,
            grace=STOP_GRACE,
        )
        await web.start()
        if web_tls is None and not is_loopback(web_address):
            log.warning(
                "the web client is served without TLS on %s, beyond this machine: session "
                "cookies cross the network in plaintext unless a TLS proxy is in front; set "
                "face.web.tls.cert_file and key_file",
                web_address,
            )
    # Said before anything is printed: a probe never sees NOT_SERVING without its reason.
    await server.set_serving(False, gateway.feed.trouble)
    feed_task = asyncio.create_task(gateway.feed.run())
    health_task = asyncio.create_task(_mirror_health(gateway.feed, server))

    async def stop() -> None:
        health_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await health_task
        if web is not None:
            await web.stop()
        await server.stop(STOP_GRACE)
        feed_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await feed_task
        await gateway.mind.close()

    address = server.address(settings.listen)

    def ready() -> None:
        # Supervisors and tests wait for these lines (the real ports when listening on port 0);
        # the web line comes first, so whoever reads the gRPC line knows both.
        if web is not None:
            print(f"face web listening on {web_address}", flush=True)
            log.info("web client serving on %s", web_address)
        print(f"face listening on {address}", flush=True)
        minds = ", ".join(settings.minds)
        log.info("FaceGateway serving on %s (Mind at %s)", address, minds)

    published_tls = settings.tls if gateway.tls is not None else None
    with contextlib.ExitStack() as published:
        published.enter_context(
            published_address(gateway.settings.data_dir, "face", address, published_tls)
        )
        if web is not None:
            web_published_tls = settings.web.tls if gateway.web_tls else None
            published.enter_context(
                published_address(gateway.settings.data_dir, "web", web_address, web_published_tls)
            )
        await run_until_signal(stop, ready=ready)
