"""PostgreSQL's writer: each unit in a transaction of its own over a connection pool; the
outbox's advisory lock (`mind.store.outbox`) orders the writers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import Engine

from mind.store.write_tx import Fence, Unit, WriteTx
from mind.store.writer import OnCommit, StoreStats

log = logging.getLogger(__name__)

T = TypeVar("T")


class PoolWriter:
    """Each unit in a transaction of its own on a worker thread (PostgreSQL)."""

    def __init__(self, engine: Engine, on_commit: OnCommit) -> None:
        self._engine = engine
        self._on_commit = on_commit
        self._running: set[asyncio.Future[Any]] = set()
        self._closed = False
        self.stats = StoreStats()
        # Set when the Mind shares the database with others (`mind.cluster`).
        self.fence: Fence | None = None
        self.node_id = ""
        # Awaited before each unit: what this Mind told the others before the write is
        # committed before it (`mind.events.relay`).
        self.settle: Callable[[], Awaitable[None]] | None = None

    async def write(self, unit: Unit[T]) -> T:
        if self._closed:
            raise RuntimeError("the store's writer is closed")
        if self.settle is not None:
            await self.settle()
        running = asyncio.ensure_future(asyncio.to_thread(self._commit, unit))
        self._running.add(running)
        running.add_done_callback(self._running.discard)
        running.add_done_callback(self._publish)
        try:
            _tx, value = await asyncio.shield(running)
        except asyncio.CancelledError:
            running.add_done_callback(_abandoned)
            raise
        return value

    def _publish(self, running: asyncio.Future[tuple[WriteTx, Any]]) -> None:
        # A done callback, so it runs before the caller resumes, and even if it was cancelled.
        if not running.cancelled() and running.exception() is None:
            tx, _value = running.result()
            if tx.events:
                self._on_commit(tx.events)

    def _commit(self, unit: Unit[T]) -> tuple[WriteTx, T]:
        with self._engine.connect() as connection, connection.begin():
            tx = WriteTx(connection, savepoint=False, fence=self.fence, node_id=self.node_id)
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


def _abandoned(running: asyncio.Future[Any]) -> None:
    """The caller of a unit went away (its run was stopped): a failure of the unit, which
    committed nothing, is said in one line rather than as a never-retrieved exception."""
    if not running.cancelled() and running.exception() is not None:
        log.info("a write its caller no longer waited for failed: %s", running.exception())
