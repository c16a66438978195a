"""The usage ledger's writer: rows buffered in memory, written in batches.

A model request must not pay a transaction of its own: `record` only appends to a list. A
background task writes what is buffered as one unit of work every `interval` seconds (sooner
once `batch` rows wait); `flush` writes at once (a report flushes first, so it counts every
request made before it), and `close` writes the rest at the Mind's stop. What a crash can lose:
the rows of the last `interval` (at most about one second of requests). Usage is an estimate
that gates nothing, so that loss is accepted for a hot path free of extra commits. A failed
write keeps its rows for the next attempt, up to `MAX_PENDING`, beyond which the oldest are
dropped with a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert

from mind.store.database import Database
from mind.store.models import UsageRecord
from mind.store.write_tx import WriteTx
from tobe.runtime.tasks import cancel_and_wait

log = logging.getLogger(__name__)

FLUSH_INTERVAL = 1.0
FLUSH_BATCH = 500
MAX_PENDING = 100_000
_INSERT = insert(UsageRecord)


@dataclass(frozen=True)
class UsageRow:
    recorded_at: datetime
    conversation_key: str
    run_id: str
    principal: str
    provider: str
    model: str
    purpose: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    reasoning_tokens: int


class UsageLedger:
    def __init__(
        self, database: Database, *, interval: float = FLUSH_INTERVAL, batch: int = FLUSH_BATCH
    ) -> None:
        self._database = database
        self._interval = interval
        self._batch = batch
        self._rows: list[UsageRow] = []
        self._full = asyncio.Event()
        self._writing = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        return len(self._rows)

    def record(self, row: UsageRow) -> None:
        self._rows.append(row)
        if len(self._rows) >= self._batch:
            self._full.set()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._flushing(), name="usage ledger")

    async def close(self) -> None:
        """Stop the background writer, then write what is left."""
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
        await self.flush()

    async def flush(self) -> None:
        """Write every buffered row, in one unit; a failure keeps them buffered and raises."""
        async with self._writing:
            rows, self._rows = self._rows, []
            if not rows:
                return
            values = [vars(row) for row in rows]

            def unit(tx: WriteTx) -> None:
                # One executemany on the transaction's connection: no ORM objects to build.
                tx.connection.execute(_INSERT, values)

            try:
                await self._database.write(unit)
            except Exception:
                # (A cancelled caller's unit still commits: its rows are not kept.)
                self._keep(rows)
                raise

    def _keep(self, rows: list[UsageRow]) -> None:
        self._rows[:0] = rows
        over = len(self._rows) - MAX_PENDING
        if over > 0:
            log.warning("usage ledger: %d rows could not be written and were dropped", over)
            del self._rows[:over]

    async def _flushing(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._full.wait(), self._interval)
            self._full.clear()
            try:
                await self.flush()
            except Exception as exc:  # the store may be back at the next attempt
                log.warning("usage ledger: writing failed (%s); retrying", type(exc).__name__)
