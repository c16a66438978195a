"""Wiring of the Awareness process: settings, logging, engine, gRPC server, shutdown order."""

from __future__ import annotations

import logging
from pathlib import Path

from awareness.auth import BearerTokenInterceptor
from awareness.engine import Engine
from awareness.scrub import Scrubber, ScrubbingFilter
from awareness.servicer import AwarenessServicer
from tobe.config import Settings
from tobe.runtime.logs import configure_logging
from tobe.runtime.server import ServiceSpec, run_until_signal, start_server
from tobe.runtime.statelock import StateLock
from tobe.runtime.tokens import awareness_token
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


async def serve(settings: Settings) -> None:
    configure_logging(settings.log_level, process="awareness")
    scrubber = install_scrubber()
    data_dir = settings.data_dir / "awareness"
    lock = StateLock(data_dir, "tobe awareness serve")
    lock.acquire(timeout=settings.mind.lock_timeout)
    try:
        token = awareness_token(settings, create=True)
        engine = Engine(
            roots=adapter_roots(settings),
            data_dir=data_dir,
            low_window=settings.awareness.low_window,
            medium_window=settings.awareness.medium_window,
            scrubber=scrubber,
        )
        await engine.start()
        servicer = AwarenessServicer(engine)
        server = await start_server(
            [
                ServiceSpec(
                    SERVICE_NAME,
                    lambda s: awareness_pb2_grpc.add_AwarenessServicer_to_server(servicer, s),
                )
            ],
            [settings.awareness.listen],
            interceptors=[BearerTokenInterceptor(token)],
            unix_socket_mode=0o600,
        )
        for address, port in server.bound.items():
            host = address.rsplit(":", 1)[0]
            log.info("awareness listening on %s", address if host == "unix" else f"{host}:{port}")

        async def stop() -> None:
            # Push first, then adapters: a shutdown never wakes the agent.
            await server.set_serving(False)
            await engine.stop()
            await server.stop(SHUTDOWN_GRACE)
            log.info("awareness stopped")

        await run_until_signal(stop)
    finally:
        lock.release()
