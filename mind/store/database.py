"""The store's only door: units of work on one durable writer, and reads that never block it.

Every write is a *unit*: a plain synchronous function `unit(tx: WriteTx) -> T` that changes
state through `tx.session` (a synchronous SQLAlchemy ORM session, or Core through
`tx.session.connection()`) and appends the outbox events describing the change with
`tx.event(...)`. `await database.write(unit)` returns `unit`'s value only after the unit is
committed, so whatever the caller acknowledges next is durable.

Why units instead of async sessions: the asyncio drivers cost a thread hop per statement and
the async ORM a greenlet switch per await; a unit costs one hop in and one out. And only
synchronous units can be grouped:

* **SQLite** (`GroupWriter`): one thread owns the only write connection. It takes the first
  unit waiting, then every unit queued behind it (at most `MAX_GROUP`), runs each in its own
  SAVEPOINT inside one `BEGIN IMMEDIATE` transaction and commits once: one fsync for the group.
  Units of a group share no ORM objects: each starts with an empty identity map.
  A unit that raises rolls back alone and its caller gets the exception; the others commit.
  If the commit fails, every caller in the group gets the error and nothing was acknowledged.
* **PostgreSQL** (`PoolWriter`): each unit runs on a worker thread in a transaction of its own
  over a connection pool; the outbox's advisory lock (`mind.store.outbox`) orders the writers.

A unit must not block on anything but the database (no network, no waiting on the loop) and
must not keep ORM objects from an earlier unit: each group gets a fresh session. Objects a unit
returns are detached but keep their loaded attributes. A unit runs to its commit even when its
caller was cancelled meanwhile (the caller just never sees the value).

Reads (`await database.read(query)`) run `query(session)` on a worker thread in a read
transaction of their own: on SQLite a deferred, `query_only` connection that reads a WAL
snapshot and never takes the write lock.

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
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from mind.store.engine import create_read_engine, create_write_engine, is_sqlite
from mind.store.models import Base, OutboxEvent
from mind.store.outbox import append_event
from tobe.config import SqliteSynchronous

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R", bound=Base)

# The most units one SQLite commit takes: enough to absorb a burst, small enough that the
# first caller of a group is not kept waiting behind a long tail.
MAX_GROUP = 64


@dataclass
class WriteTx:
    """The open transaction a unit runs in."""

    session: Session
    events: list[OutboxEvent] = field(default_factory=list)

    def event(
        self, type: str, conversation_key: str, audience: list[str], payload: dict[str, Any]
    ) -> int:
        """Append an outbox event in this transaction; returns its id."""
        row = append_event(
            self.session,
            type=type,
            conversation_key=conversation_key,
            audience=audience,
            payload=payload,
        )
        self.events.append(row)
        return row.id

    def insert(self, row: R) -> R:
        """Insert a new mapped object with one Core statement instead of the ORM's unit of
        work (a third of the CPU of a hot unit); returns it, detached, with its primary key
        and column defaults filled in. Unset columns take their defaults."""
        if self.session.new or self.session.dirty:
            self.session.flush()  # rows added the ORM way go first (foreign keys)
        table = row.__table__  # type: ignore[attr-defined]
        values = {
            column.key: getattr(row, column.key)
            for column in table.columns
            if getattr(row, column.key) is not None
        }
        result = self.session.connection().execute(table.insert(), values)
        for key, value in result.last_inserted_params().items():
            setattr(row, key, value)
        primary_key = zip(table.primary_key.columns, result.inserted_primary_key, strict=True)
        for column, value in primary_key:
            setattr(row, column.key, value)
        return row


Unit = Callable[[WriteTx], T]
Query = Callable[[Session], T]
OnCommit = Callable[[list[OutboxEvent]], None]


class Writer(Protocol):
    async def write(self, unit: Unit[T]) -> T: ...

    async def close(self) -> None: ...


@dataclass
class WriterStats:
    """Counters for benchmarks and status: units committed and the commits that held them."""

    units: int = 0
    commits: int = 0


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
        self._closed = False
        self.stats = WriterStats()

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
        with Session(self._engine, expire_on_commit=False) as session:
            if len(group) == 1:
                _run(group[0], session)
            else:
                for pending in group:
                    _run_in_savepoint(pending, session)
            if all(pending.error is not None for pending in group):
                session.rollback()
                return
            try:
                session.commit()
            except Exception as exc:  # nobody in the group is acknowledged
                log.exception("store commit of %d unit(s) failed", len(group))
                with contextlib.suppress(Exception):  # the commit may have ended it already
                    session.rollback()
                for pending in group:
                    if pending.error is None:
                        pending.error = exc
                return
        self.stats.commits += 1
        self.stats.units += sum(1 for pending in group if pending.error is None)

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


class _UnitFailed(Exception):
    """Raised inside a savepoint so that it rolls back; the unit's own error is kept."""


def _run(pending: _Pending, session: Session) -> None:
    pending.tx = WriteTx(session)
    try:
        pending.value = pending.unit(pending.tx)
        session.flush()
    except Exception as exc:
        pending.error = exc


def _run_in_savepoint(pending: _Pending, session: Session) -> None:
    try:
        with session.begin_nested():
            _run(pending, session)
            if pending.error is not None:
                raise _UnitFailed
    except _UnitFailed:
        pass
    # The next unit of the group must not see this one's objects as they were when loaded:
    # it reads what the transaction holds now (a Core update leaves ORM copies stale).
    session.expunge_all()


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
        self.stats = WriterStats()

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
        with Session(self._engine, expire_on_commit=False) as session, session.begin():
            tx = WriteTx(session)
            value = unit(tx)
        self.stats.commits += 1
        self.stats.units += 1
        return tx, value

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
    def stats(self) -> WriterStats:
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

    def _read(self, query: Query[T]) -> T:
        with Session(self._reads, expire_on_commit=False) as session, session.begin():
            return query(session)

    async def close(self) -> None:
        await self._writer.close()
        self._reads.dispose()
