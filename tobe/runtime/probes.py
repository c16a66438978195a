"""Which services a data directory runs, and whether each answers its health check.

`tobe health --all` and `tobe admin status` ask the same question. The Mind and Face are
dialled where `address_of` says (configured, else published in runtime.json, else the
default). Awareness is optional in a deployment, so it is checked only when it published its
address or one is configured (`awareness.listen` or `mind.awareness_address`); the local Hand
only when its health socket (`tobe up` starts it with `--health-listen
unix:<data_dir>/hand-health.sock`) exists; Face's web client (`web`) only when Face published
it, and over HTTP (`tobe.runtime.web_health`), the others with the gRPC health protocol. A
service that published a CA is dialled over TLS trusting that CA; the web client also when
`face.web.tls` is set (trusting the system's roots without a published CA).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import grpc

from tobe.config import Settings
from tobe.runtime.addresses import Published, address_of, published
from tobe.runtime.health import check_reason
from tobe.runtime.tls import ClientTls
from tobe.runtime.web_health import check_web

SERVICES = ("mind", "face")
WEB = "web"
HAND_HEALTH_SOCKET = "hand-health.sock"
UNREACHABLE = "UNREACHABLE"


@dataclass(frozen=True)
class Target:
    service: str
    address: str
    tls: ClientTls | None = None
    # Asked `GET /healthz` over HTTP (the web client), not with the gRPC health protocol.
    http: bool = False


@dataclass(frozen=True)
class Probe:
    """One service's answer: a health status name with the reason the service gives for not
    serving, or UNREACHABLE with the reason it could not be asked."""

    service: str
    address: str
    status: str
    detail: str = ""

    @property
    def serving(self) -> bool:
        return self.status == "SERVING"


def target(settings: Settings, service: str) -> Target:
    """Where `service` ("mind", "face" or "awareness") of this data directory listens."""
    address = address_of(settings.data_dir, service, getattr(settings, service), "listen")
    entry = published(settings.data_dir).get(service)
    return Target(service, address, _tls(entry) if entry and entry.address == address else None)


def targets(settings: Settings) -> list[Target]:
    """Every service of this data directory, the local Hand if its health socket exists."""
    found = [target(settings, service) for service in SERVICES]
    web = web_target(settings)
    if web is not None:
        found.append(web)
    awareness = _awareness(settings)
    if awareness is not None:
        found.append(awareness)
    socket = settings.data_dir / HAND_HEALTH_SOCKET
    if socket.exists():
        found.append(Target("hand", f"unix:{socket}"))
    return found


def web_target(settings: Settings) -> Target | None:
    """Face's web client, where Face published it; None when it serves none."""
    entry = published(settings.data_dir).get(WEB)
    if entry is None:
        return None
    served_tls = bool(entry.ca_file) or settings.face.web.tls.cert_file is not None
    tls = (_tls(entry) or ClientTls()) if served_tls else None
    return Target(WEB, entry.address, tls, http=True)


async def probe(where: Target, timeout: float) -> Probe:
    if where.http:
        status, detail = await check_web(where.address, timeout, where.tls)
        return Probe(where.service, where.address, status, detail)
    try:
        status, why = await check_reason(where.address, "", timeout, tls=where.tls)
    except grpc.aio.AioRpcError as exc:
        return Probe(where.service, where.address, UNREACHABLE, _reason(exc))
    return Probe(where.service, where.address, status, why)


async def probe_all(where: list[Target], timeout: float) -> list[Probe]:
    """All probes at once, so one unreachable service costs one timeout, not one each."""
    return list(await asyncio.gather(*(probe(item, timeout) for item in where)))


def _awareness(settings: Settings) -> Target | None:
    """Awareness, if this deployment has one (see the module docstring)."""
    if (
        "awareness" in published(settings.data_dir)
        or "listen" in settings.awareness.model_fields_set
    ):
        return target(settings, "awareness")
    if settings.mind.awareness_address:
        return Target("awareness", settings.mind.awareness_address)
    return None


def _tls(entry: Published) -> ClientTls | None:
    if not entry.ca_file:
        return None
    try:
        return ClientTls(root_certificates=Path(entry.ca_file).read_bytes())
    except OSError:
        return None


def _reason(error: grpc.aio.AioRpcError) -> str:
    """The status and gRPC's own text, without its nesting of "last error" prefixes."""
    details = (error.details() or "").rsplit(": ", 1)[-1]
    return f"{error.code().name}: {details}" if details else error.code().name
