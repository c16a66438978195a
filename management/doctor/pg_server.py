"""Reaching the PostgreSQL server of `database_url`: one connection of the doctor's own, with a
timeout, and what to do when it cannot be made.

The store's engines wait for a server as long as the operating system lets them; the doctor
gives up after `CONNECT_TIMEOUT` seconds, so a host that drops packets is one line, not a hang.
Each usual refusal (no server there, no such database, a wrong password, no pg_hba.conf entry,
a host that does not resolve) gets the fix that answers it.
"""

from __future__ import annotations

import psycopg
from psycopg.rows import TupleRow

from mind.store.engine import redacted_url, sync_url

CONNECT_TIMEOUT = 5
GENERIC_FIX = "check database_url (TOBE_DATABASE_URL) and that the database server runs"
Connection = psycopg.Connection[TupleRow]


def conninfo(url: str) -> str:
    """The store's URL as libpq reads it (`postgres://` and `postgresql+psycopg://` included)."""
    return sync_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def connect(url: str) -> Connection:
    """An autocommit connection to the store's server, as the Minds' settings make it."""
    return psycopg.connect(conninfo(url), autocommit=True, connect_timeout=CONNECT_TIMEOUT)


def unreachable(url: str) -> tuple[str, str] | None:
    """Why the server does not let the store in, and the fix; None when it does."""
    try:
        connect(url).close()
    except psycopg.Error as exc:
        reason = first_line(exc)
        return f"cannot open {redacted_url(url)}: {reason}", refusal_fix(reason, url)
    return None


def first_line(exc: BaseException) -> str:
    """An error's first line (libpq's hint lines follow it), or its type when it says nothing."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def refusal_fix(reason: str, url: str) -> str:
    """The fix for a connection refused with `reason` (libpq's first line)."""
    parsed = sync_url(url)
    if "does not exist" in reason and "database" in reason:
        return (
            f"create it as a superuser (CREATE DATABASE {parsed.database} OWNER "
            f"{parsed.username or 'the role of database_url'}), or correct the database name "
            "in database_url"
        )
    if "password authentication failed" in reason or "no password supplied" in reason:
        return (
            "correct the password: in database_url (with @ : / % percent-encoded) or in PGPASSWORD"
        )
    if "no pg_hba.conf entry" in reason:
        return "allow this host, role and database in the server's pg_hba.conf, then reload it"
    if "resolve host" in reason or "could not translate host name" in reason:
        return "correct the host in database_url"
    if "Connection refused" in reason or "timeout expired" in reason:
        return (
            "start the server, or correct the host and port in database_url; the server must "
            "listen there (listen_addresses, port) and no firewall may drop the connection"
        )
    return GENERIC_FIX
