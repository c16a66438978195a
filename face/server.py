"""Wiring of the Face process: `build` assembles the Mind client, the shared event feed and the
gateway servicer; `serve` runs them on the gRPC server until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from face.feed import EventFeed
from face.mind_client import MindClient
from face.projection import AdmissionModes
from face.servicer import SERVICE_NAME, FaceGatewayServicer
from tobe.config import Settings
from tobe.runtime.publishing import published_address
from tobe.runtime.server import ServiceSpec, run_until_signal, start_server
from tobe.runtime.tls import ServerTls, TlsConfigError, client_tls, server_tls, setting_names
from tobe.runtime.tokens import token_file

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


def build(settings: Settings) -> Gateway:
    """Assemble a Face; nothing connects until `serve`."""
    config = settings.face
    try:
        tls = server_tls(config.tls, "face.tls")
        address, mind_tls = client_tls(
            config.mind_tls, config.mind_address, setting_names("face.mind_tls")
        )
    except TlsConfigError as exc:
        raise FaceConfigError(str(exc)) from None
    mind = MindClient(
        address, mind_token(settings), tls=mind_tls, max_send_bytes=config.max_frame_bytes
    )
    feed = EventFeed(mind, AdmissionModes())
    return Gateway(settings, mind, feed, FaceGatewayServicer(mind, feed, config), tls)


async def serve(gateway: Gateway) -> None:
    """Serve FaceGateway on `face.listen`, published in the runtime file, and follow the Mind
    until SIGTERM or SIGINT; BindError when `face.listen` cannot be bound."""
    settings = gateway.settings.face
    server = await start_server(
        [ServiceSpec(SERVICE_NAME, gateway.servicer.register)],
        [settings.listen],
        max_message_bytes=MAX_SEND_BYTES,
        max_receive_bytes=settings.max_frame_bytes,
        tls=gateway.tls,
    )
    feed_task = asyncio.create_task(gateway.feed.run())

    async def stop() -> None:
        await server.stop(STOP_GRACE)
        feed_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await feed_task
        await gateway.mind.close()

    address = server.address(settings.listen)

    def ready() -> None:
        # Supervisors and tests wait for this line (the real port when listening on port 0).
        print(f"face listening on {address}", flush=True)
        log.info("FaceGateway serving on %s (Mind at %s)", address, settings.mind_address)

    published_tls = settings.tls if gateway.tls is not None else None
    with published_address(gateway.settings.data_dir, "face", address, published_tls):
        await run_until_signal(stop, ready=ready)
