"""gRPC server bootstrap shared by every ToBe service.

Every server registers the standard health service (`grpc.health.v1.Health`) and server
reflection, listens on one or more addresses (`host:port` or `unix:/path`), and on SIGTERM or
SIGINT stops accepting new calls and drains in-flight ones for a grace period. A request that
is not valid protobuf is answered INVALID_ARGUMENT on every server (`tobe.runtime.decoding`),
and Unix sockets are owner-only unless asked otherwise. Given a probe address, it also answers
its serving status in plain text there (`tobe.runtime.probe_answer`), for container health
checks that start no program.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tobe.runtime.decoding import DecodingInterceptor
from tobe.runtime.health_reason import ReasonedHealth
from tobe.runtime.heap import settle_heap
from tobe.runtime.ports import bind_problem
from tobe.runtime.private_files import FILE_MODE, PRIVATE_UMASK
from tobe.runtime.probe_answer import ProbeAnswer, ProbeListenError, probe_problem
from tobe.runtime.reflection import enable_reflection
from tobe.runtime.tls import ServerTls
from tobe.telemetry.grpc_context import server_interceptors

log = logging.getLogger(__name__)

# Register a servicer on a server: e.g. `lambda s: mind_pb2_grpc.add_MindServicer_to_server(x, s)`.
Registrar = Callable[[grpc.aio.Server], None]

DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# The setting of each service's section naming its probe address (`mind.probe_listen`, …).
PROBE_SETTING = "probe_listen"


class BindError(OSError):
    """A listen address could not be bound; `reason` says why ("the address is in use", …),
    `setting` which setting of the service's section names it."""

    def __init__(self, address: str, reason: str, setting: str = "listen") -> None:
        super().__init__(f"cannot listen on {address}: {reason}")
        self.address = address
        self.reason = reason
        self.setting = setting


@dataclass
class ServiceSpec:
    """One gRPC service to host: its full name (for health and reflection) and its registrar."""

    full_name: str
    register: Registrar


@dataclass
class GrpcServer:
    """A started aio server with its health servicer, so owners can flip serving status."""

    server: grpc.aio.Server
    health: ReasonedHealth
    services: Sequence[ServiceSpec]
    bound: dict[str, int] = field(default_factory=dict)
    # What set_serving last set, which the probe answer reports.
    serving: bool = False
    probe: ProbeAnswer | None = None

    def status_line(self) -> str:
        """The overall status as the health protocol names it (SERVING or NOT_SERVING), then
        the reason when not serving, as the probe answer and a container's health log show it."""
        if self.serving:
            return "SERVING"
        reason = " ".join(self.health.reason.split())  # one line, whatever the reason holds
        return f"NOT_SERVING ({reason})" if reason else "NOT_SERVING"

    async def set_serving(self, serving: bool, reason: str = "") -> None:
        """SERVING or NOT_SERVING for the server and each service; `reason` says why not
        (`tobe.runtime.health_reason`), "" when serving."""
        self.health.reason = "" if serving else reason
        self.serving = serving
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        await self.health.set("", status)
        for spec in self.services:
            await self.health.set(spec.full_name, status)

    async def stop(self, grace: float) -> None:
        await self.set_serving(False, "stopping")
        await self.server.stop(grace)
        if self.probe is not None:
            await self.probe.stop()

    def address(self, listen: str) -> str:
        """Where clients reach `listen`: a `unix:` address as given, TCP with the bound port
        (the one picked for port 0)."""
        if listen.startswith("unix:"):
            return listen
        return f"{listen.rsplit(':', 1)[0]}:{self.bound[listen]}"


async def start_server(
    services: Sequence[ServiceSpec],
    addresses: Iterable[str],
    *,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    unix_socket_mode: int = FILE_MODE,
    max_receive_bytes: int | None = None,
    serving: bool = True,
    tls: ServerTls | None = None,
    probe_listen: str = "",
) -> GrpcServer:
    """Create, bind and start a server; returns it already SERVING (or NOT_SERVING: `serving`).

    `max_receive_bytes` (default: `max_message_bytes`) caps incoming messages alone; larger
    ones end the call with RESOURCE_EXHAUSTED before the handler sees them.

    `interceptors` run outermost first; request decoding always runs innermost, after them
    (an unauthenticated call is refused as such whatever its body).
    `unix_socket_mode` chmods every `unix:` socket after binding (default 0o600, owner-only).
    Binding a TCP address with port 0 picks a free port, reported in `GrpcServer.bound`.
    An address that cannot be bound raises BindError before anything serves.
    With `tls`, every TCP address serves TLS only; Unix sockets stay plaintext (the file's
    owner-only mode is their protection).
    With `probe_listen` (`host:port`), the overall status is also answered there in plain
    text (`tobe.runtime.probe_answer`), from the moment the server starts until it stops.
    """
    addresses = list(addresses)
    # Checked with a plain socket first, so that a port in use is a BindError saying so rather
    # than gRPC's own error log line.
    for address in addresses:
        problem = bind_problem(address)
        if problem is not None:
            raise BindError(address, problem)
    problem = probe_problem(probe_listen) if probe_listen else None
    if problem is not None:
        raise BindError(probe_listen, problem, PROBE_SETTING)
    server = grpc.aio.server(
        interceptors=[*server_interceptors(), *interceptors, DecodingInterceptor()],
        options=[
            ("grpc.max_receive_message_length", max_receive_bytes or max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", 5000),
            ("grpc.so_reuseport", 0),
        ],
    )
    health_servicer = ReasonedHealth()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for spec in services:
        spec.register(server)
    names = [spec.full_name for spec in services]
    names.append(health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
    enable_reflection(names, server)
    bound: dict[str, int] = {}
    # Create sockets under a restrictive umask so an owner-only socket is never, even briefly,
    # reachable by others between bind and chmod.
    previous_umask = os.umask(PRIVATE_UMASK)
    try:
        for address in addresses:
            if address.startswith("unix:"):
                path = address.removeprefix("unix:").removeprefix("//")
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            bound[address] = _bind(server, address, tls)
        await server.start()
    except BindError:
        await server.stop(None)
        raise
    finally:
        os.umask(previous_umask)
    for address in addresses:
        if address.startswith("unix:"):
            os.chmod(address.removeprefix("unix:").removeprefix("//"), unix_socket_mode)
    result = GrpcServer(server=server, health=health_servicer, services=services, bound=bound)
    await result.set_serving(serving)
    if probe_listen:
        try:
            result.probe = await ProbeAnswer.start(probe_listen, result.status_line)
        except ProbeListenError as exc:
            await server.stop(None)
            raise BindError(exc.listen, exc.reason, PROBE_SETTING) from None
    return result


def _bind(server: grpc.aio.Server, address: str, tls: ServerTls | None) -> int:
    """Bind `address`; its port (the picked one for port 0)."""
    try:
        if tls is None or address.startswith("unix:"):
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, tls.credentials())
    except RuntimeError as exc:
        raise BindError(address, "gRPC could not bind it") from exc
    if port == 0 and not address.startswith("unix:"):
        raise BindError(address, "gRPC could not bind it")
    return port


async def run_until_signal(
    stop: Callable[[], Awaitable[None]],
    *,
    ready: Callable[[], None] | None = None,
) -> None:
    """Wait for SIGTERM/SIGINT, then await `stop` (which should drain and close everything).

    Once ready, the heap built so far is frozen and the young generation is collected less
    often (`tobe.runtime.heap`)."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    if ready is not None:
        ready()
    settle_heap()
    await stopping.wait()
    log.info("signal received; draining")
    await stop()
