"""PostgreSQL as the store: what the Minds rely on from the server, one line each.

Run when `database_url` is PostgreSQL and the store check reached it (one `skip` line on SQLite),
on one autocommit connection of the doctor's own, as the Minds' role:

- `pg version`: 11 or later. The schema's triggers are created with `EXECUTE FUNCTION`, which
  PostgreSQL 11 introduced; everything else the store uses (ON CONFLICT, SKIP LOCKED, advisory
  locks, LISTEN/NOTIFY, partial indexes) is older, and psycopg speaks to servers from 10.
- `pg commit`: `synchronous_commit` not off, a FAIL: the Mind acknowledges what it committed,
  and with it off a commit returns before it is on disk, so a crash of the server loses
  messages already acknowledged, silently.
- `pg fsync`: `fsync` on, a FAIL: off, a crash of the server's machine can corrupt the database.
- `pg notify`, `pg locks`: tried, not looked up (`pg_probes`).
- `pg connections`, `pg encryption`: `pg_room`.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from management.doctor.pg_probes import check_locks, check_notify
from management.doctor.pg_room import check_encryption, check_room
from management.doctor.pg_server import Connection, connect, first_line
from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from mind.store.engine import is_sqlite
from tobe.config import Settings

CHECK = "postgresql"
MINIMUM_VERSION = 11
# Settings that leave `synchronous_commit` at a value the Mind's durability allows.
DURABLE_COMMITS = frozenset({"on", "local", "remote_write", "remote_apply"})


def check_postgresql(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    if is_sqlite(settings.store_url):
        return [Finding(Status.SKIP, CHECK, "the store is SQLite: no database server to check")]
    if doctor.store_revision is None:
        return [Finding(Status.SKIP, CHECK, "the server cannot be reached (see store)")]
    try:
        with connect(settings.store_url) as connection:
            return [check(connection, settings) for check in CHECKS]
    except psycopg.Error as exc:
        text = f"the checks stopped: {first_line(exc)}"
        return [Finding(Status.FAIL, CHECK, text, "run `tobe doctor` again")]


def check_version(connection: Connection, _settings: Settings) -> Finding:
    return version_finding(connection.info.server_version)


def version_finding(number: int) -> Finding:
    """The line for a server whose `server_version_num` is `number` (150004 is 15.4)."""
    shown = f"{number // 10000}.{number % 10000}"
    if number // 10000 >= MINIMUM_VERSION:
        return Finding(Status.OK, "pg version", f"PostgreSQL {shown} ({MINIMUM_VERSION} or later)")
    return Finding(
        Status.FAIL,
        "pg version",
        f"PostgreSQL {shown} is too old: the store's schema needs {MINIMUM_VERSION} or later "
        "(its triggers use EXECUTE FUNCTION)",
        f"upgrade the server to PostgreSQL {MINIMUM_VERSION} or later",
    )


def check_commit(connection: Connection, _settings: Settings) -> Finding:
    value, source = _setting(connection, "synchronous_commit")
    if value in DURABLE_COMMITS:
        text = f"synchronous_commit is {value}: what the Mind acknowledges is on disk"
        return Finding(Status.OK, "pg commit", text)
    return Finding(
        Status.FAIL,
        "pg commit",
        f"synchronous_commit is {value} (set by {source}): a commit returns before it is on "
        "disk, so a crash of the server loses messages the Mind already acknowledged",
        commit_fix(source, connection.info.dbname, connection.info.user),
    )


def commit_fix(source: str, database: str, role: str) -> str:
    """How to undo `synchronous_commit = off` where `source` (pg_settings.source) set it."""
    resets = {
        "database": f"ALTER DATABASE {database} RESET synchronous_commit",
        "user": f"ALTER ROLE {role} RESET synchronous_commit",
        "database user": f"ALTER ROLE {role} IN DATABASE {database} RESET synchronous_commit",
    }
    if source in resets:
        return f"`{resets[source]}` (as its owner or a superuser), then restart the Minds"
    if source == "configuration file":
        return "set synchronous_commit = on in postgresql.conf, then reload the server"
    return "remove synchronous_commit=off from the connection's options (PGOPTIONS, the URL)"


def check_fsync(connection: Connection, _settings: Settings) -> Finding:
    value, _source = _setting(connection, "fsync")
    if value == "on":
        return Finding(Status.OK, "pg fsync", "fsync is on")
    return Finding(
        Status.FAIL,
        "pg fsync",
        "fsync is off: a crash of the server's machine can corrupt the database",
        "set fsync = on in postgresql.conf, then reload the server (off is for throwaway "
        "test servers)",
    )


def _setting(connection: Connection, name: str) -> tuple[str, str]:
    """A setting's value for this session and what set it (`pg_settings.source`)."""
    row = connection.execute(
        "SELECT setting, source FROM pg_settings WHERE name = %s", (name,)
    ).fetchone()
    assert row is not None, name
    return str(row[0]), str(row[1])


CHECKS: tuple[Callable[[Connection, Settings], Finding], ...] = (
    check_version,
    check_commit,
    check_fsync,
    check_notify,
    check_locks,
    check_room,
    check_encryption,
)
