"""Pending confirmations in the store, on each backend: each is decided once (confirm, cancel,
amend or expire), every change announced to the conversation's owner and members."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mind.actions import records
from mind.actions.expiry import PendingExpiry
from mind.errors import WrongState
from mind.events.action_views import (
    ActionTiming,
    PendingActionView,
    PendingState,
    PlanStepView,
)
from mind.store import models
from mind.store.database import Database
from mind.store.models import OutboxEvent
from mind.store.write_tx import WriteTx

KEY = "g_home"
NOW = datetime(2026, 9, 10, 7, 0, tzinfo=UTC)
TTL = 600.0


@pytest.fixture
async def home(database: Database) -> Database:
    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))
        tx.session.flush()
        tx.session.add(models.ConversationMember(conversation_key=KEY, principal="bob"))

    await database.write(unit)
    return database


async def _create(database: Database, now: datetime = NOW) -> PendingActionView:
    return await database.write(
        lambda tx: records.create(
            tx,
            conversation_key=KEY,
            owner="alice",
            run_id="run_1",
            title="Lights off",
            goal="Turn the lights off",
            timing=ActionTiming.IMMEDIATE,
            plan=[PlanStepView(1, "lights_set", "off")],
            trigger=None,
            reason="changes the house",
            now=now,
            ttl=TTL,
        )
    )


async def _decide(
    database: Database, action_id: str, state: PendingState, now: datetime = NOW
) -> PendingActionView:
    return await database.write(lambda tx: records.decide(tx, action_id, state, now=now))


def _changes(events: list[OutboxEvent]) -> list[tuple[str, list[str]]]:
    return [(e.payload["state"], list(e.audience)) for e in events if e.type == "action_changed"]


async def test_a_new_action_waits_and_is_announced_to_owner_and_members(
    home: Database, database_events: list[OutboxEvent]
):
    action = await _create(home)
    assert action.id.startswith("act_") and action.state is PendingState.PENDING
    assert action.expires_at == NOW + timedelta(seconds=TTL)
    assert _changes(database_events) == [("pending", ["alice", "bob"])]
    listed = await home.read(lambda s: records.waiting(s, KEY, NOW))
    assert listed == [action]


@pytest.mark.parametrize(
    "state", [PendingState.CONFIRMED, PendingState.CANCELLED, PendingState.AMENDED]
)
async def test_an_action_is_decided_once_and_a_second_decision_is_refused(
    home: Database, database_events: list[OutboxEvent], state: PendingState
):
    action = await _create(home)
    decided = await _decide(home, action.id, state)
    assert decided.state is state and decided.decided_at == NOW
    for second in (PendingState.CONFIRMED, PendingState.CANCELLED, PendingState.AMENDED):
        with pytest.raises(WrongState, match=f"already {state.value}"):
            await _decide(home, action.id, second)
    assert _changes(database_events) == [
        ("pending", ["alice", "bob"]),
        (state.value, ["alice", "bob"]),
    ]
    assert await home.read(lambda s: records.waiting(s, KEY, NOW)) == []


async def test_a_decision_after_the_expiry_is_refused_and_the_expiry_is_kept(
    home: Database, database_events: list[OutboxEvent]
):
    action = await _create(home)
    late = action.expires_at
    with pytest.raises(WrongState, match="expired"):
        await _decide(home, action.id, PendingState.CONFIRMED, now=late)
    expired = await home.write(lambda tx: records.expire_if_due(tx, action.id, late))
    assert expired is not None and expired.state is PendingState.EXPIRED
    with pytest.raises(WrongState, match="already expired"):
        await _decide(home, action.id, PendingState.CONFIRMED, now=late)
    assert [state for state, _ in _changes(database_events)] == ["pending", "expired"]


async def test_run_due_expires_exactly_the_actions_past_their_time(
    home: Database, database_events: list[OutboxEvent]
):
    early = await _create(home)
    later = await _create(home, now=NOW + timedelta(seconds=60))
    expiry = PendingExpiry(home)
    assert await expiry.next_deadline() == early.expires_at
    assert await expiry.run_due(early.expires_at - timedelta(seconds=1)) == []
    expired = await expiry.run_due(early.expires_at)
    assert [(a.id, a.state) for a in expired] == [(early.id, PendingState.EXPIRED)]
    assert await expiry.next_deadline() == later.expires_at
    with pytest.raises(WrongState, match="already expired"):
        await _decide(home, early.id, PendingState.CONFIRMED)
    await _decide(home, later.id, PendingState.CANCELLED)
    assert await expiry.next_deadline() is None
    assert [state for state, _ in _changes(database_events)] == [
        "pending",
        "pending",
        "expired",
        "cancelled",
    ]
