"""The store's only door: units of work on one durable writer, and reads that never block it.

Every write is a *unit*: a plain synchronous function `unit(tx: WriteTx) -> T` (`WriteTx`:
`mind.store.write_tx`) that changes state and appends the outbox events describing the change
with `tx.event(...)`.
`await database.write(unit)` returns `unit`'s value only after the unit is committed, so
whatever the caller acknowledges next is durable. Hot paths write with `tx.insert`,
`tx.execute`, `tx.rows` and `tx.first` (Core statements run on the driver's cursor,
`mind.store.statements`); anything else may use `tx.session`, an ORM session joined to the
same transaction on first use.

Why units instead of async sessions: the asyncio drivers cost a thread hop per statement and
the async ORM a greenlet switch per await; a unit costs one hop in and one out. And only
synchronous units can be grouped:

* **SQLite** (`mind.store.group_writer`): one thread owns the only write connection. It takes
  the first unit waiting, then every unit queued behind it (at most `MAX_GROUP`), runs each in
  its own SAVEPOINT inside one `BEGIN IMMEDIATE` transaction and commits once: one fsync for
  the group. A unit that raises rolls back alone and its caller gets the exception; the others
  commit. If the commit fails, every caller in the group gets the error and nothing was
  acknowledged.
* **PostgreSQL** (`mind.store.pool_writer`): each unit runs on a worker thread in a
  transaction of its own over a connection pool; the outbox's advisory lock
  (`mind.store.outbox`) orders the writers.

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
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from mind.store import statements
from mind.store.engine import create_read_engine, create_write_engine, is_sqlite
from mind.store.group_writer import GroupWriter
from mind.store.pool_writer import PoolWriter
from mind.store.statements import Statement
from mind.store.write_tx import Fence, Unit
from mind.store.writer import OnCommit, StoreStats
from tobe import telemetry
from tobe.config import SqliteSynchronous
from tobe.telemetry import instruments

T = TypeVar("T")

Query = Callable[[Session], T]


TRACED_EVERY = 10


class Database:
    """The writer and the readers of one store."""

    def __init__(self, writer: GroupWriter | PoolWriter, reads: Engine) -> None:
        self._writer = writer
        self._writes = 0  # one unit in TRACED_EVERY gets a span of its own
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

    def share(
        self,
        node_id: str,
        fence: Fence,
        settle: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """This Mind shares the database with others as `node_id` (PostgreSQL): every write
        of a conversation's state passes `fence`, commits notify with `node_id`, and each
        write first awaits `settle` (the relayed events published before it)."""
        if not isinstance(self._writer, PoolWriter):
            raise RuntimeError("only a PostgreSQL store is shared by several Minds")
        self._writer.fence = fence
        self._writer.node_id = node_id
        self._writer.settle = settle

    def on_commit(self, callback: OnCommit) -> None:
        """Send the committed events to `callback` from now on (set once, at assembly)."""
        self._writer._on_commit = callback

    async def write(self, unit: Unit[T]) -> T:
        """Run `unit` in a write transaction; returns its value once it is committed.

        Its time to commit goes to `tobe.store.transaction.duration`; one unit in
        `TRACED_EVERY` is also a span (every one would double a turn's spans)."""
        started = time.monotonic()
        self._writes += 1
        if self._writes % TRACED_EVERY == 0 and telemetry.tracing():
            with telemetry.span("store write", attributes={"db.operation.name": "write"}):
                result = await self._writer.write(unit)
        else:
            result = await self._writer.write(unit)
        instruments.store_transaction.record(time.monotonic() - started)
        return result

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
