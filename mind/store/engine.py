"""Database engines for the store: SQLite (default, WAL) or PostgreSQL, both async.

SQLite connections get `journal_mode=WAL`, `foreign_keys=ON`, a busy timeout and
`synchronous` (`[store] sqlite_synchronous`) on every connect, and every transaction starts with
`BEGIN IMMEDIATE`. Immediate transactions take the single write lock up front and wait for it
(busy timeout) instead of failing with `SQLITE_BUSY` when a transaction that read first tries to
write after another writer committed. The price: one transaction at a time, reads included. So:

* keep sessions short: never await anything slow (a provider, a Hand, a client reading a
  stream) while a session has a transaction open — close it first, and
* never open a second session while one is open in the same task: on SQLite the second waits
  for the first, which waits for the task, and fails after the busy timeout.

In the Mind, all writes share one SQLite connection (a pool of one): writers queue in the
pool, first come first served, instead of polling SQLite's lock through the busy handler, whose
sleeps convoy under load. Reads go through `create_read_engine`: their own connections,
deferred read-only transactions that see a consistent WAL snapshot and never take the write
lock.

Decide with conditional updates (`UPDATE … WHERE state = 'x'`, check the row count) rather
than read-then-write; that is correct on PostgreSQL's READ COMMITTED too.

A SQLite database file is created owner-only (0600) before the first connect; SQLite gives its
-wal and -shm files the database file's permissions.

URLs without an async driver are normalised: `sqlite:///x` becomes `sqlite+aiosqlite:///x`,
`postgresql://…` (or `postgres://…`) becomes `postgresql+psycopg://…`.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from tobe.config import SqliteSynchronous
from tobe.runtime.private_files import private_file

SQLITE_BUSY_TIMEOUT_MS = 10_000

_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+psycopg"}
_SYNC_DRIVERS = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg"}


def _backend(url: URL) -> str:
    backend = url.get_backend_name()
    if backend == "postgres":
        return "postgresql"
    if backend not in _ASYNC_DRIVERS:
        raise ValueError(f"unsupported database {backend!r}: use sqlite:/// or postgresql://")
    return backend


def _parse(url: str) -> URL:
    # SQLAlchemy does not know the `postgres://` spelling some providers hand out.
    if url.startswith("postgres://"):
        url = "postgresql://" + url.removeprefix("postgres://")
    return make_url(url)


def async_url(url: str) -> URL:
    """The URL with the store's async driver for its backend."""
    parsed = _parse(url)
    return parsed.set(drivername=_ASYNC_DRIVERS[_backend(parsed)])


def sync_url(url: str) -> URL:
    """The URL with a synchronous driver (used by migrations, which run without a loop)."""
    parsed = _parse(url)
    return parsed.set(drivername=_SYNC_DRIVERS[_backend(parsed)])


def redacted_url(url: str) -> str:
    """The URL for messages and logs, password masked."""
    return _parse(url).render_as_string(hide_password=True)


def is_sqlite(url: str | URL) -> bool:
    parsed = url if isinstance(url, URL) else _parse(url)
    return parsed.get_backend_name() == "sqlite"


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
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_read_only(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA query_only=ON")
    finally:
        cursor.close()


def _sqlite_begin_deferred(connection: Any) -> None:
    connection.exec_driver_sql("BEGIN")


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


def create_engine(url: str, *, sqlite_synchronous: SqliteSynchronous = "normal") -> AsyncEngine:
    """An async engine for `url` (see the module docstring for SQLite behaviour)."""
    target = async_url(url)
    if is_sqlite(target):
        _private_database_file(target)
        engine = create_async_engine(target, pool_size=1, max_overflow=0)
        configure_sqlite(engine.sync_engine, sqlite_synchronous)
        return engine
    return create_async_engine(target, pool_pre_ping=True)


def create_read_engine(url: str) -> AsyncEngine:
    """An engine for reads only: on SQLite, deferred read-only transactions on connections of
    their own (WAL readers never wait for the writer); on PostgreSQL, a pool of its own."""
    target = async_url(url)
    if not is_sqlite(target):
        return create_async_engine(target, pool_pre_ping=True)
    _private_database_file(target)
    engine = create_async_engine(target)
    event.listen(engine.sync_engine, "connect", _sqlite_connect)
    event.listen(engine.sync_engine, "connect", _sqlite_read_only)
    event.listen(engine.sync_engine, "begin", _sqlite_begin_deferred)
    return engine


def create_sync_engine_for(url: str, *, sqlite_synchronous: SqliteSynchronous = "normal") -> Engine:
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


def create_sync_read_engine(url: str) -> Engine:
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


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions whose objects stay readable after commit (no implicit refresh on access)."""
    return async_sessionmaker(engine, expire_on_commit=False)
