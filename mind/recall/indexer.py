"""The recall indexer: a background task of the Mind that follows the outbox into the index.

A turn never waits for indexing: the indexer reads the durable events after its cursor (the
`recall` row of `cursors`) and, in one unit of work per batch, writes the index rows they call
for together with the cursor past them, so a kill -9 loses nothing: the next start goes on
from the last committed batch. What each event does (`mind.recall.entries`):

* `message_appended`: index the message, unless its run is still running (then the run's end
  indexes it) or sealed;
* `run_changed` to an ended state: index the run's messages, unless it is sealed;
* `conversation_created`: index what a branch was created holding (its copied messages);
* `context_compacted`: index the conversation's new summary;
* `memory_changed`: index the entry as it now is, or remove it.

A deleted conversation's rows go with it (`ON DELETE CASCADE`). With no cursor yet (the first
start after the migration), or when the outbox was pruned past it, the indexer indexes what
the tables hold and starts from the outbox's head. On a store several Minds share, the unit
locks the cursor row, so one Mind at a time advances it and the others find the work done.

With semantic recall configured, a second step embeds the entries that have no embedding yet
(`mind.recall.semantic`); the keyword index never waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from mind.events.bus import EventBus
from mind.recall import entries
from mind.store import models
from mind.store.database import Database
from mind.store.insert_once import insert_if_absent
from mind.store.outbox import head_event_id, oldest_event_id, read_event_rows
from mind.store.write_tx import WriteTx
from tobe.runtime.tasks import cancel_and_wait

log = logging.getLogger(__name__)

CURSOR = "recall"
BATCH = 200
INTERVAL = 1.0
# How long the indexer lets events gather after a commit woke it (see `_following`).
SETTLE = 0.25
_CURSOR = models.Cursor
# The cursor's value until the index was first built.
UNINDEXED = -1


class RecallIndexer:
    def __init__(
        self,
        database: Database,
        bus: EventBus | None = None,
        *,
        batch: int = BATCH,
        interval: float = INTERVAL,
        settle: float = SETTLE,
        embed: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self._database = database
        self._bus = bus
        self._batch = batch
        self._interval = interval
        self._settle = settle
        self._embed = embed
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._following(), name="recall indexer")

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def step(self) -> int:
        """Index one batch of events (or, the first time, everything stored); returns how
        many events or rows it went through, 0 when the index is up to date."""
        return await self._database.write(self._unit)

    async def catch_up(self) -> None:
        """Index until the index is up to date with what was committed before the call."""
        while await self.step():
            pass
        if self._embed is not None:
            while await self._embed():
                pass

    def _unit(self, tx: WriteTx) -> int:
        session = tx.session
        cursor = _locked_cursor(session)
        if cursor is None:
            # Created before it is locked: concurrent first units (two Minds, a search
            # catching up beside the indexer) then queue on its lock, where, finding no row to
            # lock, both would insert it and one fail.
            insert_if_absent(session, models.Cursor, name=CURSOR, value=UNINDEXED)
            cursor = _locked_cursor(session)
        oldest = oldest_event_id(session)
        if cursor is None or cursor == UNINDEXED or (oldest is not None and oldest > cursor + 1):
            return self._rebuild(session)
        events = read_event_rows(session, cursor, self._batch)
        _apply(session, events)
        if events:
            session.execute(
                update(models.Cursor).where(_CURSOR.name == CURSOR).values(value=events[-1].id)
            )
        return len(events)

    def _rebuild(self, session: Session) -> int:
        head = head_event_id(session)
        added = entries.backfill(session)
        session.execute(update(models.Cursor).where(_CURSOR.name == CURSOR).values(value=head))
        session.flush()
        log.info("recall: indexed %d entries already stored", added)
        return max(added, 1)

    async def _following(self) -> None:
        subscription = self._bus.subscribe(include_ephemeral=False) if self._bus else None
        try:
            while True:
                if await self._work():
                    continue
                if subscription is None:
                    await asyncio.sleep(self._interval)
                else:
                    await subscription.wait(self._interval)
                    subscription.take_durable()
                # Let the next commits' events gather: a busy Mind's are then indexed in a
                # few larger batches, not in a small unit after every commit competing with
                # the turns' units for the writer.
                await asyncio.sleep(self._settle)
        finally:
            if subscription is not None:
                subscription.close()

    async def _work(self) -> bool:
        """Index a batch and, once caught up, embed a batch; whether more is waiting now."""
        try:
            if await self.step() >= self._batch:
                return True
            return self._embed is not None and await self._embed() > 0
        except Exception as exc:  # the store or the provider may be back next time
            log.warning("recall: indexing failed (%s); retrying", type(exc).__name__)
            return False


def _locked_cursor(session: Session) -> int | None:
    """The cursor's value, its row locked until the unit ends (None: no row yet)."""
    return session.scalar(select(_CURSOR.value).where(_CURSOR.name == CURSOR).with_for_update())


def _apply(session: Session, events: list[Any]) -> None:
    """Index what `events` call for. The appended messages and ended runs of the whole batch
    are indexed together (`entries.index_appended`): what gets indexed depends only on the
    state stored now, never on the order the events came in."""
    appended: list[int] = []
    ended: list[str] = []
    for event in events:
        payload = event.payload
        match event.type:
            case "message_appended":
                appended.append(int(str(payload["id"])))
            case "run_changed" if payload.get("state") != entries.RUNNING:
                ended.append(str(payload["id"]))
            case "conversation_created":
                entries.index_conversation(session, event.conversation_key)
            case "context_compacted":
                entries.index_summaries(session, event.conversation_key)
            case "memory_changed":
                entries.index_memory(
                    session,
                    event.conversation_key,
                    str(payload["key"]),
                    str(payload.get("run_id", "")),
                )
    entries.index_appended(session, appended, ended)
