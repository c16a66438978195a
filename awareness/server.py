"""Wiring of the Awareness process: `build` assembles the engine and its servicer, `serve` runs
them (settings, logging, the state lock, the gRPC server) until SIGTERM or SIGINT and stops them
in order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from awareness.auth import BearerTokenInterceptor
from awareness.engine import Engine
from awareness.scrub import Scrubber, ScrubbingFilter
from awareness.servicer import AwarenessServicer
from awareness.supervisor import Timeouts
from tobe.config import Settings
from tobe.runtime.logs import configure_logging
from tobe.runtime.publishing import published_address
from tobe.runtime.server import (
    DEFAULT_MAX_MESSAGE_BYTES,
    BindError,
    GrpcServer,
    ServiceSpec,
    run_until_signal,
    start_server,
)
from tobe.runtime.statelock import StateLock
from tobe.runtime.tokens import awareness_token
from tobe.telemetry import setup as telemetry_setup
from tobe.v1 import awareness_pb2, awareness_pb2_grpc

log = logging.getLogger(__name__)

BUILTIN_ROOT = Path(__file__).resolve().parent / "adapters"
SERVICE_NAME = awareness_pb2.DESCRIPTOR.services_by_name["Awareness"].full_name
SHUTDOWN_GRACE = 5.0


def adapter_roots(settings: Settings) -> list[Path]:
    roots = [BUILTIN_ROOT] if settings.awareness.builtin_adapters else []
    if settings.awareness.adapters_dir is not None:
        roots.append(settings.awareness.adapters_dir)
    return roots


def install_scrubber() -> Scrubber:
    """Route every log line of the process through the adapters' secret scrubber."""
    scrubber = Scrubber()
    for handler in logging.getLogger().handlers:
        handler.addFilter(ScrubbingFilter(scrubber))
    return scrubber


def max_reply_bytes(settings: Settings) -> int:
    """The largest reply Awareness sends: GetMedia with the largest image the Mind takes
    (`mind.max_image_bytes`) plus room for the framing, never below the platform default."""
    return max(DEFAULT_MAX_MESSAGE_BYTES, settings.mind.max_image_bytes + 64 * 1024)


@dataclass
class AwarenessApp:
    """The engine, its servicer, and the link token the Mind must present."""

    engine: Engine
    servicer: AwarenessServicer
    token: str


def build(settings: Settings, data_dir: Path, scrubber: Scrubber) -> AwarenessApp:
    """Assemble Awareness on `data_dir`; adapters start with `Engine.start`."""
    token = awareness_token(settings, create=True)
    engine = Engine(
        roots=adapter_roots(settings),
        data_dir=data_dir,
        low_window=settings.awareness.low_window,
        medium_window=settings.awareness.medium_window,
        scrubber=scrubber,
        timeouts=Timeouts(
            start=settings.awareness.start_timeout,
            stop=settings.awareness.stop_timeout,
            restart_max_delay=settings.awareness.restart_max_delay,
        ),
    )
    return AwarenessApp(engine, AwarenessServicer(engine), token)


async def _start_server(settings: Settings, app: AwarenessApp) -> GrpcServer:
    return await start_server(
        [
            ServiceSpec(
                SERVICE_NAME,
                lambda s: awareness_pb2_grpc.add_AwarenessServicer_to_server(app.servicer, s),
            )
        ],
        [settings.awareness.listen],
        interceptors=[BearerTokenInterceptor(app.token)],
        unix_socket_mode=0o600,
        max_message_bytes=max_reply_bytes(settings),
        max_receive_bytes=DEFAULT_MAX_MESSAGE_BYTES,
        probe_listen=settings.awareness.probe_listen,
    )


async def serve(settings: Settings) -> None:
    """Serve Awareness under its data directory's state lock until SIGTERM or SIGINT."""
    configure_logging(settings.log_level, process="awareness", format=settings.log.format)
    telemetry_setup.configure(settings.telemetry, "awareness")
    scrubber = install_scrubber()
    data_dir = settings.data_dir / "awareness"
    lock = StateLock(data_dir, "tobe awareness serve")
    lock.acquire(timeout=settings.mind.lock_timeout)
    try:
        app = build(settings, data_dir, scrubber)
        await app.engine.start()
        try:
            server = await _start_server(settings, app)
        except BindError:
            await app.engine.stop()
            raise
        address = server.address(settings.awareness.listen)
        log.info("awareness listening on %s", address)

        async def stop() -> None:
            # Push first, then adapters: a shutdown never wakes the agent.
            await server.set_serving(False)
            await app.engine.stop()
            await server.stop(SHUTDOWN_GRACE)
            log.info("awareness stopped")

        with published_address(settings.data_dir, "awareness", address):
            await run_until_signal(stop)
    finally:
        lock.release()
