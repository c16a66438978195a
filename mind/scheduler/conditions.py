"""Conditions: scheduled actions fired by an observation or a memory write, once per match.

Observations: the Awareness router calls `ConditionWatch.observed` for each batch after its
notes were delivered and before it records the batch as seen, so a crash replays the batch
into it; the claim's occasion `observation:<id>` is unique per action, so a replay claims
nothing new. An action only sees observations routed to a conversation its owner is the
owner or a member of: one person's environment never fires another's schedule.

Memory: `memory_changed` events are read from the outbox after a persisted cursor
(`cursors` row `scheduler.memory_outbox_id`), advanced in the unit that claims what they
fired (occasion `memory:<outbox id>`). Memory is per conversation, so an action watches its
own conversation's entry; the text matched is the entry's current one (so changes of one
entry read together fire at most once, for the last), and a deleted entry fires nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.awareness.notes import Routed, entry
from mind.events.action_views import TriggerKind, TriggerView
from mind.events.views import MemoryChangedView
from mind.memory.store import MEMORY_CHANGED
from mind.scheduler import records
from mind.scheduler.model import Clock, FiringDelivery
from mind.store import models
from mind.store.database import Database
from mind.store.insert_once import insert_if_absent
from mind.store.outbox import head_event_id
from mind.store.write_tx import WriteTx
from tobe.v1 import awareness_pb2 as pb

MEMORY_CURSOR = "scheduler.memory_outbox_id"
# Outbox events read per unit while catching up on memory writes.
_MEMORY_BATCH = 200
_KIND_FIELDS = ("kind", "event", "type")


def observation_matches(trigger: TriggerView, observation: pb.Observation) -> bool:
    """Adapter name, content kind and pattern, each empty meaning any."""
    if trigger.adapter and trigger.adapter != observation.adapter_name:
        return False
    if trigger.observation_kind and trigger.observation_kind != _kind_of(observation):
        return False
    return _search(trigger.match, observation.content_json)


class ConditionWatch:
    """Claims the firings conditions cause; the scheduler delivers them."""

    def __init__(self, database: Database, clock: Clock) -> None:
        self._database = database
        self._clock = clock

    async def observed(self, routed: Sequence[Routed]) -> list[FiringDelivery]:
        """Claim, in one unit, each firing the routed observations cause."""
        if not routed:
            return []
        now = self._clock.now()
        return await self._database.write(lambda tx: _claim_observations(tx, routed, now))

    async def memory_written(self) -> list[FiringDelivery]:
        """Claim the firings of memory writes committed since the cursor, moving it."""
        claimed: list[FiringDelivery] = []
        more = True
        while more:
            batch, more = await self._database.write(self._memory_unit(self._clock.now()))
            claimed.extend(batch)
        return claimed

    @staticmethod
    def _memory_unit(now: datetime) -> Callable[[WriteTx], tuple[list[FiringDelivery], bool]]:
        return lambda tx: _claim_memory(tx, now)


def _claim_observations(
    tx: WriteTx, routed: Sequence[Routed], now: datetime
) -> list[FiringDelivery]:
    session = tx.session
    watching = records.active_conditions(session, TriggerKind.OBSERVATION)
    if not watching:
        return []
    audiences: dict[str, set[str]] = {}
    claimed = []
    for item in routed:
        audience = audiences.get(item.conversation_key)
        if audience is None:
            audience = audiences[item.conversation_key] = _audience(session, item)
        for watch in watching:
            if watch.owner in audience and observation_matches(watch.trigger, item.observation):
                matched = json.dumps(entry(item.observation), ensure_ascii=False)
                occasion = f"observation:{item.observation.id}"
                firing = records.claim_condition(tx, watch.schedule_id, occasion, now, matched)
                if firing is not None:
                    claimed.append(firing)
    return claimed


def _audience(session: Session, item: Routed) -> set[str]:
    return set(records.audience_of(session, item.conversation_key))


def _claim_memory(tx: WriteTx, now: datetime) -> tuple[list[FiringDelivery], bool]:
    session = tx.session
    cursor = session.get(models.Cursor, MEMORY_CURSOR)
    if cursor is None:
        # First start: writes made before the scheduler existed fire nothing.
        # Another Mind starting on the same database may write it first: its value stands.
        insert_if_absent(session, models.Cursor, name=MEMORY_CURSOR, value=head_event_id(session))
        return [], False
    events = list(
        session.scalars(
            select(models.OutboxEvent)
            .where(models.OutboxEvent.id > cursor.value, models.OutboxEvent.type == MEMORY_CHANGED)
            .order_by(models.OutboxEvent.id)
            .limit(_MEMORY_BATCH)
        )
    )
    if not events:
        return [], False
    watching = records.active_conditions(session, TriggerKind.MEMORY)
    claimed = []
    for event in _latest_per_entry(events):
        change = MemoryChangedView.from_payload(event.payload)
        for watch in watching:
            if (watch.conversation_key, watch.trigger.memory_key) != (
                event.conversation_key,
                change.key,
            ):
                continue
            text = _current_text(session, event.conversation_key, change.key)
            if text is None or not _search(watch.trigger.match, text):
                continue
            if _changed_again(session, event, change.key):
                continue  # the text read is a later write's: its own change is matched
            matched = json.dumps({"key": change.key, "text": text}, ensure_ascii=False)
            occasion = f"memory:{event.id}"
            firing = records.claim_condition(tx, watch.schedule_id, occasion, now, matched)
            if firing is not None:
                claimed.append(firing)
    cursor.value = events[-1].id
    return claimed, len(events) == _MEMORY_BATCH


def _latest_per_entry(events: list[models.OutboxEvent]) -> list[models.OutboxEvent]:
    """The last change of each entry among `events`: only the entry's current text can be
    read, so the earlier changes read together with it are matched by it, once."""
    latest: dict[tuple[str, str], models.OutboxEvent] = {}
    for event in events:
        latest[(event.conversation_key, event.payload["key"])] = event
    return sorted(latest.values(), key=lambda event: event.id)


def _changed_again(session: Session, event: models.OutboxEvent, key: str) -> bool:
    """Whether the entry changed after `event`. Read after its text: on PostgreSQL each
    statement sees the latest commits, so a later write's text may be read with an earlier
    event, and that write's event is then visible here (a write commits text and event
    together)."""
    later = session.scalars(
        select(models.OutboxEvent.payload).where(
            models.OutboxEvent.id > event.id,
            models.OutboxEvent.type == MEMORY_CHANGED,
            models.OutboxEvent.conversation_key == event.conversation_key,
        )
    )
    return any(payload.get("key") == key for payload in later)


def _current_text(session: Session, conversation_key: str, key: str) -> str | None:
    return session.scalar(
        select(models.MemoryEntry.text).where(
            models.MemoryEntry.conversation_key == conversation_key,
            models.MemoryEntry.key == key,
        )
    )


def _kind_of(observation: pb.Observation) -> str:
    try:
        content = json.loads(observation.content_json or "{}")
    except json.JSONDecodeError:
        return ""
    if not isinstance(content, dict):
        return ""
    for field in _KIND_FIELDS:
        if field in content:
            return str(content[field])
    return ""


def _search(pattern: str, text: str) -> bool:
    return not pattern or re.search(pattern, text, re.IGNORECASE) is not None
