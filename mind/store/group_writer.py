"""SQLite's writer: one thread owns the only write connection and commits units in groups
(one fsync for the group; see `mind.store.database`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine

from mind.store.write_tx import Unit, WriteTx
from mind.store.writer import OnCommit, StoreStats

log = logging.getLogger(__name__)

T = TypeVar("T")

# The most units one SQLite commit takes: enough to absorb a burst, small enough that the
# first caller of a group is not kept waiting behind a long tail.
MAX_GROUP = 64


@dataclass
class _Pending:
    unit: Unit[Any]
    future: asyncio.Future[Any]
    tx: WriteTx | None = None
    value: Any = None
    error: BaseException | None = None


class GroupWriter:
    """One thread, one SQLite write connection, group commit (see `mind.store.database`)."""

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


def _resolve(pending: _Pending) -> None:
    if pending.future.done():
        return
    if pending.error is not None:
        pending.future.set_exception(pending.error)
    else:
        pending.future.set_result(pending.value)
