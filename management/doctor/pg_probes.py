"""LISTEN/NOTIFY and advisory locks, tried on the doctor's connection as the Minds' role.

Reading privileges would miss what breaks them in practice: a connection pooler in
transaction mode between the Minds and the server (a LISTEN and its NOTIFY, a session's lock
and its unlock land on different server connections), a read-only standby, EXECUTE revoked
from the advisory lock functions. So each is done once, on a channel and a key of its own: the
NOTIFY must come back to its LISTEN, the lock must be taken and released by the same session.
"""

from __future__ import annotations

import secrets
from typing import LiteralString

import psycopg
from psycopg import sql

from management.doctor.pg_server import Connection, first_line
from management.doctor.report import Finding, Status
from tobe.config import Settings

NOTIFY_WAIT = 5.0
DIRECT = "connect the Minds to the primary server directly, or through a pooler in session mode"


def check_notify(connection: Connection, _settings: Settings) -> Finding:
    channel = sql.Identifier(f"tobe_doctor_{secrets.token_hex(8)}")
    try:
        connection.execute(sql.SQL("LISTEN {}").format(channel))
        connection.execute(sql.SQL("NOTIFY {}, 'probe'").format(channel))
        arrived = list(connection.notifies(timeout=NOTIFY_WAIT, stop_after=1))
        connection.execute(sql.SQL("UNLISTEN {}").format(channel))
    except psycopg.Error as exc:
        return Finding(
            Status.FAIL,
            "pg notify",
            f"LISTEN/NOTIFY fails: {first_line(exc)}",
            f"{DIRECT} (a read-only standby refuses LISTEN)",
        )
    if not arrived:
        return Finding(
            Status.FAIL,
            "pg notify",
            f"a NOTIFY did not reach its LISTEN within {NOTIFY_WAIT:g} s",
            f"{DIRECT}: a LISTEN lasts as long as its server connection",
        )
    return Finding(Status.OK, "pg notify", "a NOTIFY reached its LISTEN")


def check_locks(connection: Connection, _settings: Settings) -> Finding:
    key = secrets.randbits(62)
    role = connection.info.user
    try:
        taken = _flag(connection, "SELECT pg_try_advisory_lock(%s)", key)
        released = _flag(connection, "SELECT pg_advisory_unlock(%s)", key)
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
    except psycopg.Error as exc:
        return Finding(
            Status.FAIL,
            "pg locks",
            f"the role {role} cannot take advisory locks: {first_line(exc)}",
            "GRANT EXECUTE ON FUNCTION pg_try_advisory_lock(bigint), "
            f"pg_advisory_unlock(bigint), pg_advisory_xact_lock(bigint) TO {role} (PUBLIC "
            "holds them unless they were revoked)",
        )
    if not (taken and released):
        return Finding(
            Status.FAIL,
            "pg locks",
            "a session's advisory lock on a free key was not taken and released by that session",
            DIRECT,
        )
    return Finding(
        Status.OK, "pg locks", f"the role {role} takes session and transaction advisory locks"
    )


def _flag(connection: Connection, query: LiteralString, key: int) -> bool:
    row = connection.execute(query, (key,)).fetchone()
    return bool(row and row[0])
