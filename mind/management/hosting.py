"""Serving the Management service on an owner-only Unix socket (never on TCP)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from mind.management.service import ManagementService
from mind.management.servicer import ManagementServicer
from tobe.runtime.server import GrpcServer, ServiceSpec, start_server
from tobe.v1 import management_pb2, management_pb2_grpc

SERVICE_NAME = management_pb2.DESCRIPTOR.services_by_name["Management"].full_name
# sun_path holds 108 bytes including the terminating NUL.
MAX_SOCKET_PATH = 107


@dataclass
class ManagementEndpoint:
    """A running Management server and the socket file it owns."""

    server: GrpcServer
    socket_path: Path

    @property
    def target(self) -> str:
        return f"unix:{self.socket_path}"

    async def stop(self, grace: float = 1.0) -> None:
        """Drain calls, then remove the socket file so clients see at once that it is gone."""
        await self.server.stop(grace)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()


async def serve_management(service: ManagementService, socket_path: Path) -> ManagementEndpoint:
    """Serve `service` on `socket_path` with mode 0600; a stale socket file is replaced.

    The umask is tightened while binding so the socket is never reachable by others, not even
    for the moment between bind and chmod.
    """
    if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH:
        raise OSError(
            f"the management socket path {socket_path} is longer than {MAX_SOCKET_PATH} bytes; "
            "use a shorter data directory (TOBE_DATA_DIR)"
        )
    servicer = ManagementServicer(service)
    spec = ServiceSpec(
        full_name=SERVICE_NAME,
        register=lambda server: management_pb2_grpc.add_ManagementServicer_to_server(
            servicer, server
        ),
    )
    previous = os.umask(0o177)
    try:
        server = await start_server([spec], [f"unix:{socket_path}"], unix_socket_mode=0o600)
    finally:
        os.umask(previous)
    return ManagementEndpoint(server=server, socket_path=socket_path)
