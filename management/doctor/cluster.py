"""This Mind among several on one PostgreSQL database: its node id, and the address the other
Minds reach it at (`[mind] node_id`, `advertise_address`; docs/cluster.md).

The other Minds dial a Mind at the address it advertises: `advertise_address`, else the address
it listens on. A wildcard listen address (0.0.0.0, [::]) names no host to dial, so without
`advertise_address` no other Mind can reach this one: a FAIL naming the setting. On SQLite
(one Mind, one file) neither applies: one `skip` line.
"""

from __future__ import annotations

import ipaddress

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from mind.store.engine import is_sqlite
from tobe.config import Settings
from tobe.runtime.ports import tcp_host_port

CHECK = "cluster"
# Where a Mind keeps the node id it made itself when `[mind] node_id` is empty.
NODE_ID_FILE = "node-id"
ADVERTISE = "[mind] advertise_address (TOBE_MIND__ADVERTISE_ADDRESS)"
ADVERTISE_FIX = f"set {ADVERTISE} to the host:port the other Minds reach this Mind at"


def check_cluster(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    if is_sqlite(settings.store_url):
        text = "the store is SQLite: one Mind, so [mind] node_id and advertise_address do not apply"
        return [Finding(Status.SKIP, CHECK, text)]
    return [cluster_finding(settings)]


def cluster_finding(settings: Settings) -> Finding:
    """Whether the other Minds on the database can reach this one, by which node id."""
    mind, node = settings.mind, _node(settings)
    if mind.advertise_address:
        problem = _undialable(mind.advertise_address)
        if problem:
            text = f"[mind] advertise_address {mind.advertise_address!r} {problem}"
            return Finding(Status.FAIL, CHECK, text, ADVERTISE_FIX)
        text = f"{node}, reached at {mind.advertise_address} ([mind] advertise_address)"
        return Finding(Status.OK, CHECK, text)
    problem = _undialable(mind.listen)
    if problem:
        return Finding(
            Status.FAIL,
            CHECK,
            f"[mind] listen {mind.listen!r} {problem}, and [mind] advertise_address is empty: "
            "the other Minds cannot reach this one",
            ADVERTISE_FIX,
        )
    text = f"{node}, reached at its listen address {mind.listen}{_local(mind.listen)}"
    return Finding(Status.OK, CHECK, text)


def _undialable(address: str) -> str:
    """Why another Mind cannot dial `address` ("" when it can)."""
    if address.startswith("unix:"):
        return ""
    parsed = tcp_host_port(address)
    if parsed is None:
        return "is not host:port"
    ip = _ip(parsed[0])
    if ip is not None and ip.is_unspecified:
        return "is a wildcard address, which names no host to dial"
    return ""


def _local(address: str) -> str:
    """A note when only Minds on this machine can dial `address`."""
    parsed = tcp_host_port(address)
    host = parsed[0] if parsed else ""
    ip = _ip(host)
    if address.startswith("unix:") or host == "localhost" or (ip is not None and ip.is_loopback):
        return " (only Minds on this machine reach it)"
    return ""


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None  # a name


def _node(settings: Settings) -> str:
    """`node mind-a`: the configured id, else the one the Mind made and kept."""
    if settings.mind.node_id:
        return f"node {settings.mind.node_id}"
    path = settings.data_dir / NODE_ID_FILE
    try:
        kept = path.read_text(encoding="utf-8").strip()
    except OSError:
        kept = ""
    if kept:
        return f"node {kept} (kept in {path})"
    return f"node id made at the Mind's first start (kept in {path})"
