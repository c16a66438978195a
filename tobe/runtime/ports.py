"""Whether a listen address can be bound, and who holds it when it cannot.

A service checks its TCP address with a plain socket before gRPC binds it, so a port in use
ends the start with one line naming the address, its holder and the setting to change, instead
of gRPC's own log line and traceback. `tobe up` asks the same before it starts anything.

The holder is found in the data directory's runtime file (another ToBe service of this data
directory), else in `/proc` (a listening socket of a process this user can see), else unknown.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from pathlib import Path

from tobe.runtime.addresses import Published, published, runtime_file

_LISTEN_STATE = "0A"


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
    host, port = parsed
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"the host {host!r} does not resolve ({exc.strerror})"
    family, kind, proto, _, where = infos[0]
    with socket.socket(family, kind, proto) as probe:
        # As gRPC binds: a port left in TIME_WAIT by a stopped server is free to reuse.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(where)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "the address is in use"
            return f"the address is not available on this machine ({exc.strerror})"
    return None


def holder(data_dir: Path, address: str) -> str:
    """Who holds `address`, as a phrase ("" when nobody this process can see)."""
    for name, entry in running_services(data_dir).items():
        if entry.address == address and entry.pid != os.getpid():
            return f"ToBe's {name} (pid {entry.pid}, per {runtime_file(data_dir)})"
    parsed = tcp_host_port(address)
    pid = listener_pid(parsed[1]) if parsed is not None else None
    if pid is None:
        return ""
    return f"pid {pid} ({command_line(pid)})"


def running_services(data_dir: Path) -> dict[str, Published]:
    """The published services whose process is a `tobe` command: after a reboot, a stale
    entry's pid may belong to an unrelated process."""
    return {
        name: entry
        for name, entry in published(data_dir).items()
        if "tobe" in command_line(entry.pid)
    }


def listener_pid(port: int) -> int | None:
    """The process with a listening TCP socket on `port`, if this user can see it (Linux)."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    targets = {f"socket:[{inode}]" for inode in inodes}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for descriptor in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(descriptor) in targets:
                        return int(entry.name)
    return None


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as lines:
            next(lines, None)
            for line in lines:
                fields = line.split()
                if len(fields) > 9 and fields[3] == _LISTEN_STATE:
                    if int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(fields[9])
    return inodes


def command_line(pid: int) -> str:
    """The command line of process `pid`, shortened; "unknown command" when unreadable."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "unknown command"
    words = raw.decode(errors="replace").replace("\0", " ").split()
    return " ".join(words)[:120] or "unknown command"


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
