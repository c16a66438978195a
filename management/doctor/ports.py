"""The services' ports: free, held by the running ToBe of this data directory, or by whom.

A port is tried by binding it (as the service would); when that fails, `tobe.runtime.ports`
names the listening process (psutil reads the kernel's socket tables). A holder that
published that service in `<data_dir>/runtime.json`, or, while this data directory's Mind
runs, whose command is `tobe <process> serve`, is the running ToBe: fine. The web client
(`web`, on `face.web.listen`) is served by the Face process, and checked unless
`face.web.enabled` is off.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.runtime.addresses import Published
from tobe.runtime.ports import bind_error, holder_of, running_services


@dataclass(frozen=True)
class Listener:
    """A published service's listen address, the setting naming it and the process serving it."""

    service: str
    address: str
    setting: str
    process: str


def check_ports(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, "ports", "the configuration does not load")]
    running = running_services(settings.data_dir)
    web = settings.face.web
    listeners = [
        Listener("mind", settings.mind.listen, "[mind] listen (TOBE_MIND__LISTEN)", "mind"),
        Listener("face", settings.face.listen, "[face] listen (TOBE_FACE__LISTEN)", "face"),
        Listener("web", web.listen, "[face.web] listen (TOBE_FACE__WEB__LISTEN)", "face"),
        Listener(
            "awareness",
            settings.awareness.listen,
            "[awareness] listen (TOBE_AWARENESS__LISTEN)",
            "awareness",
        ),
    ]
    return [
        _check(listener, running, doctor.online)
        if web.enabled or listener.service != "web"
        else Finding(Status.SKIP, "port web", "face.web.enabled is off: Face serves no web client")
        for listener in listeners
    ]


def _check(listener: Listener, running: dict[str, Published], online: bool) -> Finding:
    service, address, setting = listener.service, listener.address, listener.setting
    check = f"port {service}"
    entry = running.get(service)
    if entry is not None and entry.address != address:
        # Started elsewhere (`tobe up --port-base`, a flag): its own address is what counts.
        return Finding(
            Status.OK,
            check,
            f"the running ToBe {service} listens at {entry.address} (pid {entry.pid}); "
            f"configured: {address}",
        )
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
    problem = bind_error(host, port)
    if problem is None:
        return Finding(Status.OK, check, f"{address} is free")
    if isinstance(problem, socket.gaierror) or problem.errno != errno.EADDRINUSE:
        reason = problem.strerror or str(problem)
        return Finding(
            Status.FAIL, check, f"cannot listen on {address}: {reason}", f"change {setting}"
        )
    holder = holder_of(port)
    published_here = entry is not None and entry.pid == holder.pid
    serves = holder.serves(listener.process)
    if holder.pid is not None and (published_here or (online and serves)):
        return Finding(
            Status.OK, check, f"{address} is held by the running ToBe {service} (pid {holder.pid})"
        )
    return Finding(
        Status.FAIL,
        check,
        f"{address} is in use by {holder.description}",
        f"stop that process, or give ToBe another port with {setting}",
    )
