"""Whether the server has connections enough for the Minds, and whether theirs leave the
machine unencrypted.

A Mind opens at most its store's two pools, full (read from the engines `mind.store.engine`
builds, so the count follows them). How many Minds share the database is what the Face's list
of them says (`face.mind_addresses`), else one; the line says how many fit either way. The
connection counts only when it leaves the machine: over a Unix socket or loopback nothing does.
"""

from __future__ import annotations

import ipaddress

from management.doctor.pg_server import Connection
from management.doctor.report import Finding, Status
from tobe.config import Settings

ENCRYPT_FIX = (
    "add sslmode=require to database_url (`…/tobe?sslmode=require`), or sslmode=verify-full "
    "with the server's CA (sslrootcert) to also check who answers"
)


def connections_per_mind(url: str) -> int:
    """The most connections one Mind's store opens: its write and read pools, full."""
    from sqlalchemy.pool import QueuePool

    from mind.store.engine import create_read_engine, create_write_engine

    total = 0
    for engine in (create_write_engine(url), create_read_engine(url)):
        try:
            pool = engine.pool
            assert isinstance(pool, QueuePool), type(pool)
            total += pool.size() + pool._max_overflow
        finally:
            engine.dispose()
    return total


def check_room(connection: Connection, settings: Settings) -> Finding:
    per_mind = connections_per_mind(settings.store_url)
    limit, reserved = _connection_limits(connection)
    usable = limit - reserved
    counted = connection.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
    ).fetchone()
    in_use = counted[0] if counted else 0
    room = usable // per_mind
    said = (
        f"max_connections {limit} leaves {usable} for clients ({in_use} in use now); a Mind "
        f"opens up to {per_mind}: room for {room}"
    )
    minds = len(settings.face.mind_addresses)
    if room >= max(minds, 1):
        return Finding(Status.OK, "pg connections", said)
    wanted = f"face.mind_addresses lists {minds}" if minds else "one Mind needs them all"
    return Finding(
        Status.FAIL,
        "pg connections",
        f"{said}, and {wanted}",
        f"raise max_connections to {max(minds, 1) * per_mind + reserved} or more "
        "(postgresql.conf or ALTER SYSTEM), then restart the server",
    )


def _connection_limits(connection: Connection) -> tuple[int, int]:
    """max_connections, and how many of them ordinary roles may not use: those kept for
    superusers and, from PostgreSQL 16, for roles granted pg_use_reserved_connections."""
    rows = connection.execute(
        "SELECT name, setting FROM pg_settings WHERE name IN "
        "('max_connections', 'superuser_reserved_connections', 'reserved_connections')"
    ).fetchall()
    values = {str(name): int(setting) for name, setting in rows}
    return values["max_connections"], sum(values.values()) - values["max_connections"]


def check_encryption(connection: Connection, _settings: Settings) -> Finding:
    row = connection.execute(
        "SELECT host(inet_server_addr()), version FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
    ).fetchone()
    assert row is not None
    return encryption_finding(row[0], row[1])


def encryption_finding(server_address: str | None, tls_version: str | None) -> Finding:
    """The line for a connection to `server_address` (None: a Unix socket), encrypted with
    `tls_version` (None: not encrypted)."""
    if tls_version is not None:
        return Finding(Status.OK, "pg encryption", f"the connection is encrypted ({tls_version})")
    if server_address is None:
        text = "not encrypted, over a Unix socket: nothing leaves this machine"
        return Finding(Status.OK, "pg encryption", text)
    if ipaddress.ip_address(server_address).is_loopback:
        text = f"not encrypted, over loopback ({server_address}): nothing leaves this machine"
        return Finding(Status.OK, "pg encryption", text)
    return Finding(
        Status.WARN,
        "pg encryption",
        f"the connection to {server_address} is not encrypted: conversations and credentials "
        "cross the network readable by anyone on its path",
        ENCRYPT_FIX,
    )
