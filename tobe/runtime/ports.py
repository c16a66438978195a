"""Whether a listen address can be bound, and who holds it when it cannot.

A service checks its TCP address with a plain socket before gRPC binds it, so a port in use
ends the start with one line naming the address, its holder and the setting to change, instead
of gRPC's own log line and traceback. `tobe up` asks the same before it starts anything.

The holder is found in the data directory's runtime file (another ToBe service of this data
directory), else through `psutil` (the kernel's socket tables: a listening socket of a process
this user can see), else unknown. `psutil` is imported by the functions that ask it, so a
service that binds its port without trouble never loads it.
"""

from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from tobe.runtime.addresses import Published, published, runtime_file

_LONGEST_COMMAND = 120


@dataclass(frozen=True)
class Holder:
    """The process listening on a port, as far as this user may see it."""

    pid: int | None
    # "python3 (pid 4711: python3 -m http.server 7420)" or "a process this user cannot see …".
    description: str
    command: tuple[str, ...] = ()

    def serves(self, service: str) -> bool:
        """Whether its command line is `… tobe SERVICE serve …` (`-m tobe` included)."""
        words = [word.rsplit("/", 1)[-1] for word in self.command]
        return any(words[i : i + 3] == ["tobe", service, "serve"] for i in range(len(words)))


def tcp_host_port(address: str) -> tuple[str, int] | None:
    """`(host, port)` of a TCP `host:port` address; None for `unix:` or an unparsable one."""
    if address.startswith("unix:") or ":" not in address:
        return None
    host, _, port = address.rpartition(":")
    try:
        return host.strip("[]") or "0.0.0.0", int(port)
    except ValueError:
        return None


def bind_problem(address: str) -> str | None:
    """Why `address` cannot be bound right now ("in use", …), or None when it can (or is not
    a TCP address with a fixed port)."""
    parsed = tcp_host_port(address)
    if parsed is None or parsed[1] == 0:
        return None
    error = bind_error(*parsed)
    if error is None:
        return None
    if isinstance(error, socket.gaierror):
        return f"the host {parsed[0]!r} does not resolve ({error.strerror})"
    if error.errno == errno.EADDRINUSE:
        return "the address is in use"
    return f"the address is not available on this machine ({error.strerror})"


def bind_error(host: str, port: int) -> OSError | None:
    """The error binding `host:port` gives right now, or None when it can be bound."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return exc
    family, kind, proto, _, where = infos[0]
    with socket.socket(family, kind, proto) as probe:
        # As gRPC binds: a port left in TIME_WAIT by a stopped server is free to reuse.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(where)
        except OSError as exc:
            return exc
    return None


def holder(data_dir: Path, address: str) -> str:
    """Who holds `address`, as a phrase ("" when nobody this process can see)."""
    for name, entry in running_services(data_dir).items():
        if entry.address == address and entry.pid != os.getpid():
            return f"ToBe's {name} (pid {entry.pid}, per {runtime_file(data_dir)})"
    parsed = tcp_host_port(address)
    if parsed is None:
        return ""
    found = holder_of(parsed[1])
    return found.description if found.pid is not None else ""


def running_services(data_dir: Path) -> dict[str, Published]:
    """The published services whose process is a `tobe` command: after a reboot, a stale
    entry's pid may belong to an unrelated process."""
    return {
        name: entry
        for name, entry in published(data_dir).items()
        if "tobe" in command_line(entry.pid)
    }


def holder_of(port: int) -> Holder:
    """The process listening on TCP `port`, as far as this user may see it."""
    import psutil

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
        return _process(connection.pid)
    return Holder(None, "a process this user cannot see (another user's, or in a container)")


def command_line(pid: int) -> str:
    """The command line of process `pid`, shortened; "unknown command" when unreadable."""
    import psutil

    try:
        words = psutil.Process(pid).cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return "unknown command"
    return _shortened(" ".join(words)) or "unknown command"


def _process(pid: int) -> Holder:
    import psutil

    try:
        process = psutil.Process(pid)
        name, command = process.name(), tuple(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return Holder(pid, f"pid {pid}")
    return Holder(pid, f"{name} (pid {pid}: {_shortened(' '.join(command) or name)})", command)


def _shortened(text: str) -> str:
    return text if len(text) <= _LONGEST_COMMAND else text[: _LONGEST_COMMAND - 1] + "…"


def accepts_connections(address: str, timeout: float = 2.0) -> bool:
    """True when something accepts a connection at `address` (`host:port` or `unix:/path`)."""
    if address.startswith("unix:"):
        path = address.removeprefix("unix:").removeprefix("//")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(timeout)
            try:
                probe.connect(path)
            except OSError:
                return False
            return True
    parsed = tcp_host_port(address)
    if parsed is None:
        return False
    try:
        socket.create_connection(parsed, timeout=timeout).close()
    except OSError:
        return False
    return True
