"""Wiring of the Face process: Mind client, shared event feed, gateway servicer, gRPC server."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from face.feed import EventFeed
from face.mind_client import MindClient
from face.projection import AdmissionModes
from face.servicer import SERVICE_NAME, FaceGatewayServicer
from tobe.config import Settings
from tobe.runtime.server import ServiceSpec, run_until_signal, start_server
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


async def serve(settings: Settings) -> None:
    mind = MindClient(settings.face.mind_address, mind_token(settings))
    feed = EventFeed(mind, AdmissionModes())
    servicer = FaceGatewayServicer(mind, feed, settings.face)
    server = await start_server(
        [ServiceSpec(SERVICE_NAME, servicer.register)],
        [settings.face.listen],
        max_message_bytes=MAX_SEND_BYTES,
        max_receive_bytes=settings.face.max_frame_bytes,
    )
    feed_task = asyncio.create_task(feed.run())

    async def stop() -> None:
        await server.stop(STOP_GRACE)
        feed_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await feed_task
        await mind.close()

    listen = settings.face.listen
    address = listen if listen.startswith("unix:") else (
        f"{listen.rsplit(':', 1)[0]}:{server.bound[listen]}"
    )

    def ready() -> None:
        # Supervisors and tests wait for this line (the real port when listening on port 0).
        print(f"face listening on {address}", flush=True)
        log.info("FaceGateway serving on %s (Mind at %s)", address, settings.face.mind_address)

    await run_until_signal(stop, ready=ready)
