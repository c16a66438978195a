"""Database engines for the store: SQLite (default, WAL) or PostgreSQL, both synchronous.

The engines are used by `mind.store.database` (which runs every statement off the event loop)
and by the migrations.

SQLite connections get `journal_mode=WAL`, `foreign_keys=ON`, a busy timeout and
`synchronous` (`[store] sqlite_synchronous`) on every connect. The write engine has one
connection, owned by the store's writer thread, and begins every transaction `BEGIN IMMEDIATE`:
it takes the write lock up front, so another process writing the file (the management CLI while
the Mind is stopped, a migration) makes it wait (busy timeout) rather than fail with
`SQLITE_BUSY` halfway. The read engine's connections are `query_only` and begin deferred: each
read sees a consistent WAL snapshot and never takes the write lock.

Decide with conditional updates (`UPDATE … WHERE state = 'x'`, check the row count) rather
than read-then-write; that is correct on PostgreSQL's READ COMMITTED too.

A SQLite database file is created owner-only (0600) before the first connect; SQLite gives its
-wal and -shm files the database file's permissions.

URLs are normalised to the store's drivers: `sqlite+aiosqlite:///x` (older configurations)
becomes `sqlite:///x`, `postgresql://…` (or `postgres://…`) becomes `postgresql+psycopg://…`.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.engine import URL, Dialect, make_url

from tobe.config import SqliteSynchronous
from tobe.runtime.private_files import private_file

SQLITE_BUSY_TIMEOUT_MS = 10_000

_DRIVERS = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg"}


def _backend(url: URL) -> str:
    backend = url.get_backend_name()
    if backend == "postgres":
        return "postgresql"
    if backend not in _DRIVERS:
        raise ValueError(f"unsupported database {backend!r}: use sqlite:/// or postgresql://")
    return backend


def _parse(url: str) -> URL:
    # SQLAlchemy does not know the `postgres://` spelling some providers hand out.
    if url.startswith("postgres://"):
        url = "postgresql://" + url.removeprefix("postgres://")
    return make_url(url)


def sync_url(url: str) -> URL:
    """The URL with the store's driver for its backend."""
    parsed = _parse(url)
    return parsed.set(drivername=_DRIVERS[_backend(parsed)])


def redacted_url(url: str) -> str:
    """The URL for messages and logs, password masked."""
    return _parse(url).render_as_string(hide_password=True)


def is_sqlite(url: str | URL) -> bool:
    parsed = url if isinstance(url, URL) else _parse(url)
    return parsed.get_backend_name() == "sqlite"


def is_sqlite_dialect(dialect: Dialect) -> bool:
    return dialect.name == "sqlite"


_SYNCHRONOUS_PRAGMA = {"normal": "NORMAL", "full": "FULL"}


def _sqlite_connect(
    dbapi_connection: Any, _record: Any, synchronous: SqliteSynchronous = "normal"
) -> None:
    # Take transaction control away from the driver, so `_sqlite_begin` decides how to begin.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute(f"PRAGMA synchronous={_SYNCHRONOUS_PRAGMA[synchronous]}")
    finally:
        cursor.close()


def _sqlite_begin(connection: Any) -> None:
    # On the driver's connection: SQLAlchemy's execution layer would cost more than the BEGIN.
    connection.connection.driver_connection.execute("BEGIN IMMEDIATE")


def _sqlite_read_only(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA query_only=ON")
    finally:
        cursor.close()


def _sqlite_begin_deferred(connection: Any) -> None:
    connection.connection.driver_connection.execute("BEGIN")


def _private_database_file(url: URL) -> None:
    """Create the SQLite file 0600 (or strip others' access) unless it lives in memory."""
    database = url.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        private_file(Path(database))


def configure_sqlite(engine: Engine, synchronous: SqliteSynchronous = "normal") -> None:
    """Apply the pragmas and immediate transactions to a (sync or async's sync) engine."""
    if synchronous not in _SYNCHRONOUS_PRAGMA:
        raise ValueError(f"sqlite synchronous must be normal or full, not {synchronous!r}")
    event.listen(engine, "connect", partial(_sqlite_connect, synchronous=synchronous))
    event.listen(engine, "begin", _sqlite_begin)


def create_write_engine(url: str, *, sqlite_synchronous: SqliteSynchronous = "normal") -> Engine:
    """The write engine of `mind.store.database`: on SQLite one connection (its writer thread
    owns it), immediate transactions and the configured `synchronous`."""
    target = sync_url(url)
    if is_sqlite(target):
        _private_database_file(target)
        engine = create_sync_engine(
            target, pool_size=1, max_overflow=0, connect_args={"check_same_thread": False}
        )
        configure_sqlite(engine, sqlite_synchronous)
        return engine
    return create_sync_engine(target, pool_pre_ping=True, pool_size=8, max_overflow=8)


def create_read_engine(url: str) -> Engine:
    """The read engine of `mind.store.database`: on SQLite, deferred read-only transactions on
    connections of their own (WAL readers never wait for the writer)."""
    target = sync_url(url)
    if not is_sqlite(target):
        return create_sync_engine(target, pool_pre_ping=True)
    _private_database_file(target)
    engine = create_sync_engine(target, connect_args={"check_same_thread": False})
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "connect", _sqlite_read_only)
    event.listen(engine, "begin", _sqlite_begin_deferred)
    return engine


def create_migration_engine(url: str) -> Engine:
    """A synchronous engine with the same per-connection setup, for Alembic."""
    target = sync_url(url)
    if is_sqlite(target):
        _private_database_file(target)
        engine = create_sync_engine(target)
        configure_sqlite(engine)
        return engine
    return create_sync_engine(target)
