"""The store's only door: units of work on one durable writer, and reads that never block it.

Every write is a *unit*: a plain synchronous function `unit(tx: WriteTx) -> T` that changes
state and appends the outbox events describing the change with `tx.event(...)`.
`await database.write(unit)` returns `unit`'s value only after the unit is committed, so
whatever the caller acknowledges next is durable. Hot paths write with `tx.insert`,
`tx.execute`, `tx.rows` and `tx.first` (Core statements run on the driver's cursor,
`mind.store.statements`); anything else may use `tx.session`, an ORM session joined to the
same transaction on first use.

Why units instead of async sessions: the asyncio drivers cost a thread hop per statement and
the async ORM a greenlet switch per await; a unit costs one hop in and one out. And only
synchronous units can be grouped:

* **SQLite** (`GroupWriter`): one thread owns the only write connection. It takes the first
  unit waiting, then every unit queued behind it (at most `MAX_GROUP`), runs each in its own
  SAVEPOINT inside one `BEGIN IMMEDIATE` transaction and commits once: one fsync for the group.
  A unit that raises rolls back alone and its caller gets the exception; the others commit.
  If the commit fails, every caller in the group gets the error and nothing was acknowledged.
* **PostgreSQL** (`PoolWriter`): each unit runs on a worker thread in a transaction of its own
  over a connection pool; the outbox's advisory lock (`mind.store.outbox`) orders the writers.

A unit must not block on anything but the database (no network, no waiting on the loop). Each
unit gets a session of its own, so units of a group share no ORM objects; objects a unit
returns are detached but keep their loaded attributes. A unit runs to its commit even when its
caller was cancelled meanwhile (the caller just never sees the value).

Reads (`await database.read(query)`) run `query(session)` on a worker thread in a read
transaction of their own: on SQLite a deferred, `query_only` connection that reads a WAL
snapshot and never takes the write lock. `database.rows(statement)` runs one select the same
way without a session (the hot reads).

After each commit the events of the committed units go to `on_commit` (the event bus), in
commit order, on the event loop, before any caller of the group resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection, Delete, Engine, Insert, Table
from sqlalchemy.orm import Session
from sqlalchemy.orm.session import JoinTransactionMode

from mind.store import outbox, statements
from mind.store.engine import (
    create_read_engine,
    create_write_engine,
    is_sqlite,
    is_sqlite_dialect,
)
from mind.store.models import Base, OutboxEvent
from mind.store.statements import Statement
from tobe.config import SqliteSynchronous

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R", bound=Base)

# The most units one SQLite commit takes: enough to absorb a burst, small enough that the
# first caller of a group is not kept waiting behind a long tail.
MAX_GROUP = 64


class WriteTx:
    """The open transaction a unit runs in.

    Hot paths use `execute`, `rows`, `first` and `insert`: module-level Core statements run
    on the driver's cursor (`mind.store.statements`). Anything else may use `session`, an ORM
    session created on first use and joined to the same transaction.
    """

    def __init__(self, connection: Connection, *, savepoint: bool) -> None:
        self.connection = connection
        self.events: list[OutboxEvent] = []
        self._dialect = connection.dialect
        self._cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
        self._savepoint = savepoint
        self._session: Session | None = None
        # Tables whose deleted rows must leave no readable bytes once committed.
        self.scrubbed: set[str] = set()

    @property
    def session(self) -> Session:
        if self._session is None:
            # Inside a unit's savepoint the session needs one of its own, so that a failed
            # flush (which rolls the session back) ends only this unit.
            mode: JoinTransactionMode = "create_savepoint" if self._savepoint else "rollback_only"
            self._session = Session(
                bind=self.connection, join_transaction_mode=mode, expire_on_commit=False
            )
        return self._session

    def execute(self, statement: Statement, **values: Any) -> int:
        """Run a statement; returns the number of rows it changed."""
        self._flush()
        prepared = statements.prepared(statement, self._dialect)
        self._cursor.execute(prepared.sql, prepared.bind(values))
        return int(self._cursor.rowcount)

    def delete_securely(self, statement: Delete, **values: Any) -> int:
        """Run a DELETE whose removed bytes must not stay in the database file: on SQLite with
        `secure_delete` on for it (SQLite overwrites what it frees with zeros); PostgreSQL has
        no such switch (see `scrub_after_commit`). Off again afterwards: it costs every
        deletion a write of the freed space."""
        if not is_sqlite_dialect(self._dialect):
            return self.execute(statement, **values)
        self._flush()
        self._cursor.execute("PRAGMA secure_delete=ON")
        try:
            return self.execute(statement, **values)
        finally:
            self._cursor.execute("PRAGMA secure_delete=OFF")

    def scrub_after_commit(self, table: str) -> None:
        """After this unit's commit, leave no older copy of `table`'s deleted rows readable:
        SQLite checkpoints the WAL with TRUNCATE (the rows' older page images live there);
        PostgreSQL runs VACUUM on `table` (dead tuples stay until vacuumed)."""
        self.scrubbed.add(table)

    def rows(self, statement: Statement, **values: Any) -> list[Any]:
        """The rows of a select (named tuples by column key)."""
        self._flush()
        return statements.fetch(self._cursor, statement, self._dialect, values)

    def first(self, statement: Statement, **values: Any) -> Any | None:
        found = self.rows(statement, **values)
        return found[0] if found else None

    def insert(self, row: R) -> R:
        """Insert a new mapped object with one statement instead of the ORM's unit of work;
        returns it, detached, with its primary key and column defaults filled in."""
        table = table_of(type(row))
        given = {
            column.key: value
            for column in table.columns
            if (value := getattr(row, column.key)) is not None
        }
        for key, value in self.insert_values(type(row), given).items():
            if key not in given:  # the row shows what was stored
                setattr(row, key, value)
        return row

    def insert_values(self, model: type[Base], values: dict[str, Any]) -> dict[str, Any]:
        """Insert a row of `model`'s table given as column values (no mapped object to build,
        for rows nobody reads back); returns the values stored, defaults and primary key
        included."""
        self._flush()  # rows added the ORM way go first (foreign keys)
        stored = dict(values)
        statement, returned_keys = _insert_statement(table_of(model), tuple(values))
        prepared = statements.prepared(statement, self._dialect, column_keys=tuple(values))
        for name, _, default in prepared.parameters:
            if name not in stored and default is not None:
                stored[name] = default()
        self._cursor.execute(prepared.sql, prepared.bind(stored))
        if returned_keys:
            stored.update(zip(returned_keys, self._cursor.fetchone(), strict=True))
        return stored

    def event(
        self, type: str, conversation_key: str, audience: list[str], payload: dict[str, Any]
    ) -> int:
        """Append an outbox event in this transaction; returns its id."""
        event = outbox.new_event(type, conversation_key, audience, payload)
        if outbox.needs_writer_lock(self._dialect):
            self.execute(outbox.WRITER_LOCK)
        self.insert(event)
        self.events.append(event)
        return event.id

    def _flush(self) -> None:
        if self._session is not None and (self._session.new or self._session.dirty):
            self._session.flush()

    def _finish(self) -> None:
        """The unit returned: write what its session still holds."""
        if self._session is not None:
            self._session.commit()  # flushes; the transaction itself is the writer's
            self._session.close()
        self._cursor.close()

    def _abandon(self) -> None:
        """The unit raised: drop its session (rolling back its savepoint, if any)."""
        if self._session is not None:
            with contextlib.suppress(Exception):
                self._session.close()
        self._cursor.close()


Unit = Callable[[WriteTx], T]
Query = Callable[[Session], T]
OnCommit = Callable[[list[OutboxEvent]], None]


class Writer(Protocol):
    async def write(self, unit: Unit[T]) -> T: ...

    async def close(self) -> None: ...


@dataclass
class StoreStats:
    """Counters for benchmarks and status: units committed, the commits that held them, and
    reads (read transactions and single-statement reads)."""

    units: int = 0
    commits: int = 0
    reads: int = 0


@dataclass
class _Pending:
    unit: Unit[Any]
    future: asyncio.Future[Any]
    tx: WriteTx | None = None
    value: Any = None
    error: BaseException | None = None


class GroupWriter:
    """One thread, one SQLite write connection, group commit (see the module docstring)."""

    def __init__(self, engine: Engine, on_commit: OnCommit) -> None:
        self._engine = engine
        self._on_commit = on_commit
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._connection: Connection | None = None  # the writer thread's, kept open
        self._closed = False
        # A TRUNCATE checkpoint a reader kept from finishing: the next group tries again.
        self._retry_checkpoint = False
        self.stats = StoreStats()

    async def write(self, unit: Unit[T]) -> T:
        if self._closed:
            raise RuntimeError("the store's writer is closed")
        if self._thread is None:
            self._start()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put(_Pending(unit, future))
        return await asyncio.shield(future)

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="tobe-store-writer", daemon=True)
        self._thread.start()

    async def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        self._closed = True
        if self._thread is not None:
            self._queue.put(None)
            await asyncio.to_thread(self._thread.join)
        if self._connection is not None:
            self._connection.close()
        self._engine.dispose()

    def _serve(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            group = [first]
            while len(group) < MAX_GROUP:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)
                    break
                group.append(item)
            try:
                self._commit(group)
            except Exception as exc:  # the writer must outlive any one group
                log.exception("store writer failed on a group of %d unit(s)", len(group))
                for pending in group:
                    pending.error = pending.error or exc
            self._hand_back(group)

    def _hand_back(self, group: list[_Pending]) -> None:
        """Settle each caller on its own event loop (a store may outlive a loop, e.g. in
        tests); a caller whose loop has closed is gone and needs nothing."""
        by_loop: dict[asyncio.AbstractEventLoop, list[_Pending]] = {}
        for pending in group:
            by_loop.setdefault(pending.future.get_loop(), []).append(pending)
        for loop, pendings in by_loop.items():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._settle, pendings)

    def _commit(self, group: list[_Pending]) -> None:
        if self._connection is None:
            self._connection = self._engine.connect()
        connection = self._connection
        try:
            transaction = connection.begin()
            if len(group) == 1:
                _run(group[0], connection, savepoint=False)
            else:
                for pending in group:
                    _run(pending, connection, savepoint=True)
            if all(pending.error is not None for pending in group):
                if transaction.is_active:  # a failed flush may have rolled it back already
                    transaction.rollback()
                return
            transaction.commit()
            scrub = self._retry_checkpoint or any(
                p.tx is not None and p.error is None and p.tx.scrubbed for p in group
            )
            self._retry_checkpoint = False
        except Exception as exc:  # nobody in the group is acknowledged
            log.exception("store commit of %d unit(s) failed", len(group))
            # Its state is unknown (a failed COMMIT may leave the transaction open): drop the
            # driver's connection, which rolls back whatever it still holds; the next group
            # opens a new one.
            self._connection = None
            with contextlib.suppress(Exception):
                connection.invalidate()
                connection.close()
            for pending in group:
                if pending.error is None:
                    pending.error = exc
            return
        self.stats.commits += 1
        self.stats.units += sum(1 for pending in group if pending.error is None)
        if scrub:
            self._checkpoint(connection)

    def _checkpoint(self, connection: Connection) -> None:
        """Copy the WAL into the database file and truncate it to nothing, so the page images
        of rows deleted securely are gone from both files (between groups: the writer holds
        no transaction; readers finishing their snapshots are waited for)."""
        driver: Any = connection.connection.driver_connection
        try:
            busy, _frames, _copied = driver.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except Exception:  # the group is committed; its callers must still hear so
            log.exception("the WAL checkpoint after a secure deletion failed; retried later")
            busy = 1
        if busy:
            log.warning("the WAL could not be truncated now (a reader held it); retried later")
            self._retry_checkpoint = True

    def _settle(self, group: list[_Pending]) -> None:
        events = [
            event
            for pending in group
            if pending.error is None and pending.tx is not None
            for event in pending.tx.events
        ]
        if events:
            self._on_commit(events)
        for pending in group:
            _resolve(pending)


def _run(pending: _Pending, connection: Connection, *, savepoint: bool) -> None:
    """Run one unit; with `savepoint`, a unit that raises is rolled back alone."""
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    if savepoint:
        cursor.execute("SAVEPOINT unit")
    tx = pending.tx = WriteTx(connection, savepoint=savepoint)
    try:
        pending.value = pending.unit(tx)
        tx._finish()
    except Exception as exc:
        pending.error = exc
        tx._abandon()
        if savepoint:
            cursor.execute("ROLLBACK TO SAVEPOINT unit")
    if savepoint:
        cursor.execute("RELEASE SAVEPOINT unit")
    cursor.close()


def table_of(model: type[Base]) -> Table:
    """The table a model class is mapped to (every model of the store maps one table)."""
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to a table")
    return table


_INSERTS: dict[tuple[str, tuple[str, ...]], tuple[Insert, tuple[str, ...]]] = {}


def _insert_statement(table: Table, keys: tuple[str, ...]) -> tuple[Insert, tuple[str, ...]]:
    """The insert of `keys` into `table`, returning the primary key columns the row lacks
    (their keys come second)."""
    found = _INSERTS.get((table.name, keys))
    if found is None:
        missing = [column for column in table.primary_key.columns if column.key not in keys]
        statement = table.insert().returning(*missing) if missing else table.insert()
        found = _INSERTS[(table.name, keys)] = (statement, tuple(c.key for c in missing))
    return found


def _resolve(pending: _Pending) -> None:
    if pending.future.done():
        return
    if pending.error is not None:
        pending.future.set_exception(pending.error)
    else:
        pending.future.set_result(pending.value)


class PoolWriter:
    """Each unit in a transaction of its own on a worker thread (PostgreSQL)."""

    def __init__(self, engine: Engine, on_commit: OnCommit) -> None:
        self._engine = engine
        self._on_commit = on_commit
        self._running: set[asyncio.Future[Any]] = set()
        self._closed = False
        self.stats = StoreStats()

    async def write(self, unit: Unit[T]) -> T:
        if self._closed:
            raise RuntimeError("the store's writer is closed")
        running = asyncio.ensure_future(asyncio.to_thread(self._commit, unit))
        self._running.add(running)
        running.add_done_callback(self._running.discard)
        running.add_done_callback(self._publish)
        _tx, value = await asyncio.shield(running)
        return value

    def _publish(self, running: asyncio.Future[tuple[WriteTx, Any]]) -> None:
        # A done callback, so it runs before the caller resumes, and even if it was cancelled.
        if not running.cancelled() and running.exception() is None:
            tx, _value = running.result()
            if tx.events:
                self._on_commit(tx.events)

    def _commit(self, unit: Unit[T]) -> tuple[WriteTx, T]:
        with self._engine.connect() as connection, connection.begin():
            tx = WriteTx(connection, savepoint=False)
            try:
                value = unit(tx)
                tx._finish()
            except BaseException:
                tx._abandon()
                raise
        self.stats.commits += 1
        self.stats.units += 1
        for table in sorted(tx.scrubbed):
            self._vacuum(table)
        return tx, value

    def _vacuum(self, table: str) -> None:
        """Remove the dead tuples of `table` now rather than when autovacuum gets to them
        (VACUUM runs outside a transaction)."""
        try:
            with self._engine.connect() as connection:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
                connection.exec_driver_sql(f"VACUUM {table}")
        except Exception:  # the unit is committed; its caller must still hear so
            log.exception("VACUUM %s after a secure deletion failed", table)

    async def close(self) -> None:
        """Let the units already running commit, then release the pool."""
        self._closed = True
        await asyncio.gather(*self._running, return_exceptions=True)
        self._engine.dispose()


class Database:
    """The writer and the readers of one store."""

    def __init__(self, writer: GroupWriter | PoolWriter, reads: Engine) -> None:
        self._writer = writer
        self._reads = reads

    @classmethod
    def open(
        cls,
        url: str,
        *,
        on_commit: OnCommit = lambda _events: None,
        sqlite_synchronous: SqliteSynchronous = "normal",
    ) -> Database:
        """Engines for `url`; nothing connects until the first read or write."""
        engine = create_write_engine(url, sqlite_synchronous=sqlite_synchronous)
        writer: GroupWriter | PoolWriter = (
            GroupWriter(engine, on_commit) if is_sqlite(url) else PoolWriter(engine, on_commit)
        )
        return cls(writer, create_read_engine(url))

    @property
    def ids_follow_commits(self) -> bool:
        """Whether ids drawn by inserts become visible in increasing order (SQLite: one writer
        at a time), so "everything after id N" never misses a row committed later."""
        return isinstance(self._writer, GroupWriter)

    @property
    def stats(self) -> StoreStats:
        return self._writer.stats

    def on_commit(self, callback: OnCommit) -> None:
        """Send the committed events to `callback` from now on (set once, at assembly)."""
        self._writer._on_commit = callback

    async def write(self, unit: Unit[T]) -> T:
        """Run `unit` in a write transaction; returns its value once it is committed."""
        return await self._writer.write(unit)

    async def read(self, query: Query[T]) -> T:
        """Run `query` in a read transaction of its own: one consistent state throughout."""
        return await asyncio.to_thread(self._read, query)

    async def rows(self, statement: Statement, **values: Any) -> list[Any]:
        """One select, on a read connection's driver cursor (`mind.store.statements`): the
        hot reads, whose single statement needs no transaction of its own."""
        return await asyncio.to_thread(self._rows, statement, values)

    async def first(self, statement: Statement, **values: Any) -> Any | None:
        found = await self.rows(statement, **values)
        return found[0] if found else None

    def read_now(self, query: Query[T]) -> T:
        """`read` on the calling thread, for a caller that cannot await (one short read)."""
        return self._read(query)

    def _rows(self, statement: Statement, values: dict[str, Any]) -> list[Any]:
        self.stats.reads += 1
        # Back in the pool, the connection is rolled back: that ends PostgreSQL's implicit
        # transaction; SQLite's driver runs the statement in autocommit mode.
        with self._reads.connect() as connection:
            cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
            try:
                return statements.fetch(cursor, statement, connection.dialect, values)
            finally:
                cursor.close()

    def _read(self, query: Query[T]) -> T:
        self.stats.reads += 1
        with Session(self._reads, expire_on_commit=False) as session, session.begin():
            return query(session)

    async def close(self) -> None:
        await self._writer.close()
        self._reads.dispose()
