"""The services' ports: free, held by the running ToBe of this data directory, or by whom.

A port is tried by binding it (as the service would); when that fails, `psutil` names the
listening process (it reads the kernel's socket tables, /proc on Linux). A holder that
published that service in `<data_dir>/runtime.json`, or, while this data directory's Mind
runs, whose command is `tobe <service> serve`, is the running ToBe: fine.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

import psutil

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.runtime.addresses import Published, published

_LONGEST_COMMAND = 80


@dataclass(frozen=True)
class Holder:
    pid: int | None
    # "python3 (pid 4711: python3 -m http.server 7420)" or "a process of another user".
    description: str
    command: tuple[str, ...] = ()

    def serves(self, service: str) -> bool:
        """Whether its command line is `… tobe SERVICE serve …` (`-m tobe` included)."""
        words = [word.rsplit("/", 1)[-1] for word in self.command]
        return any(words[i : i + 3] == ["tobe", service, "serve"] for i in range(len(words)))


def check_ports(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, "ports", "the configuration does not load")]
    running = published(settings.data_dir)
    listen = {
        "mind": settings.mind.listen,
        "face": settings.face.listen,
        "awareness": settings.awareness.listen,
    }
    return [_check(service, address, running, doctor.online) for service, address in listen.items()]


def _check(service: str, address: str, running: dict[str, Published], online: bool) -> Finding:
    check = f"port {service}"
    setting = f"[{service}] listen (TOBE_{service.upper()}__LISTEN)"
    if address.startswith("unix:"):
        return Finding(Status.OK, check, f"{address}: a Unix socket")
    host, _, port_text = address.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        return Finding(Status.FAIL, check, f"{address!r} is not host:port", f"correct {setting}")
    if port == 0:
        return Finding(Status.OK, check, f"{address}: the service picks a free port")
    problem = _bind_error(host, port)
    if problem is None:
        return Finding(Status.OK, check, f"{address} is free")
    if problem.errno != errno.EADDRINUSE:
        reason = problem.strerror or str(problem)
        return Finding(
            Status.FAIL, check, f"cannot listen on {address}: {reason}", f"change {setting}"
        )
    holder = holder_of(port)
    entry = running.get(service)
    published_here = entry is not None and entry.pid == holder.pid
    if holder.pid is not None and (published_here or (online and holder.serves(service))):
        return Finding(
            Status.OK, check, f"{address} is held by the running ToBe {service} (pid {holder.pid})"
        )
    return Finding(
        Status.FAIL,
        check,
        f"{address} is in use by {holder.description}",
        f"stop that process, or give ToBe another port with {setting}",
    )


def _bind_error(host: str, port: int) -> OSError | None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc
    return None


def holder_of(port: int) -> Holder:
    """The process listening on TCP `port`, as far as this user may see it."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        connections = []
    for connection in connections:
        if connection.status != psutil.CONN_LISTEN or not connection.laddr:
            continue
        if connection.laddr.port != port:
            continue
        if connection.pid is None:
            break
        return _holder(connection.pid)
    return Holder(None, "a process this user cannot see (another user's, or in a container)")


def _holder(pid: int) -> Holder:
    try:
        process = psutil.Process(pid)
        name, command = process.name(), tuple(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return Holder(pid, f"pid {pid}")
    shown = " ".join(command) or name
    if len(shown) > _LONGEST_COMMAND:
        shown = shown[: _LONGEST_COMMAND - 1] + "…"
    return Holder(pid, f"{name} (pid {pid}: {shown})", command)
