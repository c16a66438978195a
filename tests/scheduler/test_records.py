"""Scheduled actions in the store, on each backend: claims, next due times, the state machine,
redelivery and the events each change commits."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from scheduling import KEY, START, schedule

from mind.conversation import inputs
from mind.errors import NotFound, WrongState
from mind.events.action_views import (
    FiringOutcome,
    ScheduledActionView,
    ScheduleState,
    TriggerKind,
    TriggerView,
)
from mind.scheduler import records
from mind.scheduler.errors import InvalidTrigger
from mind.store.database import Database
from mind.store.models import OutboxEvent

HOURLY = TriggerView(TriggerKind.INTERVAL, "UTC", every_seconds=3600)
pytestmark = pytest.mark.usefixtures("conversations")


def changed(events: list[OutboxEvent]) -> list[ScheduledActionView]:
    return [
        ScheduledActionView.from_payload(e.payload) for e in events if e.type == "schedule_changed"
    ]


async def claim(database: Database, now: datetime) -> list[records.FiringDelivery]:
    return await database.write(lambda tx: records.claim_due(tx, now))


async def listed(database: Database, include_ended: bool = True) -> list[ScheduledActionView]:
    return await database.read(lambda s: records.list_schedules(s, None, include_ended))


async def test_creating_an_interval_anchors_it_one_interval_ahead_and_announces_it(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    view = await schedule(database, HOURLY)
    assert view.id.startswith("sch_") and view.state == ScheduleState.ACTIVE
    assert view.next_fire_at == START + timedelta(hours=1)
    assert view.trigger.start_at == START + timedelta(hours=1)
    [event] = [e for e in database_events if e.type == "schedule_changed"]
    assert event.audience == ["alice", "bob"]
    assert changed(database_events) == [view]


async def test_an_invalid_trigger_writes_nothing(database: Database) -> None:
    with pytest.raises(InvalidTrigger):
        await schedule(database, TriggerView(TriggerKind.CRON, "UTC", cron="every day"))
    assert await listed(database) == []


async def test_claiming_twice_at_the_same_now_yields_one_firing(database: Database) -> None:
    view = await schedule(database, HOURLY)
    due = START + timedelta(hours=1)
    [firing] = await claim(database, due)
    assert await claim(database, due) == []
    assert (firing.schedule_id, firing.due_at, firing.idempotency_key) == (
        view.id,
        due,
        f"firing:{firing.firing_id}",
    )
    [after] = await listed(database)
    assert after.firing_count == 1 and after.next_fire_at == due + timedelta(hours=1)


async def test_nothing_is_claimed_before_its_due_time(database: Database) -> None:
    await schedule(database, HOURLY)
    assert await claim(database, START + timedelta(minutes=59)) == []


async def test_a_downtime_over_many_intervals_claims_one_firing_and_moves_to_the_future(
    database: Database,
) -> None:
    await schedule(database, HOURLY)
    back = START + timedelta(hours=5, minutes=30)
    [firing] = await claim(database, back)
    assert firing.due_at == START + timedelta(hours=5)
    assert await claim(database, back) == []
    [after] = await listed(database)
    assert after.next_fire_at == START + timedelta(hours=6)


async def test_with_catch_up_a_downtime_claims_each_missed_interval(database: Database) -> None:
    await schedule(database, HOURLY, catch_up=True)
    back = START + timedelta(hours=3, minutes=30)
    dues = []
    while claimed := await claim(database, back):
        dues += [firing.due_at for firing in claimed]
    assert dues == [START + timedelta(hours=n) for n in (1, 2, 3)]


async def test_a_one_time_action_finishes_when_claimed(database: Database) -> None:
    at = START + timedelta(minutes=5)
    await schedule(database, TriggerView(TriggerKind.AT, "UTC", at=at))
    [firing] = await claim(database, at + timedelta(seconds=1))
    assert firing.due_at == at
    [after] = await listed(database)
    assert (after.state, after.next_fire_at) == (ScheduleState.FINISHED, None)
    assert await database.read(lambda s: records.list_schedules(s, None, False)) == []


async def test_pause_resume_and_delete_follow_the_state_machine(database: Database) -> None:
    view = await schedule(database, HOURLY)

    async def change(what: records.Change, now: datetime = START) -> ScheduledActionView:
        return await database.write(lambda tx: records.change_schedule(tx, view.id, what, now))

    paused = await change("pause")
    assert (paused.state, paused.next_fire_at) == (ScheduleState.PAUSED, None)
    assert await claim(database, START + timedelta(hours=3)) == []
    with pytest.raises(WrongState, match="it is paused"):
        await change("pause")
    later = START + timedelta(hours=3, minutes=10)
    resumed = await change("resume", later)
    # What it missed while paused is not fired: next is the first occurrence after now.
    assert (resumed.state, resumed.next_fire_at) == (
        ScheduleState.ACTIVE,
        START + timedelta(hours=4),
    )
    deleted = await change("delete")
    assert (deleted.state, deleted.next_fire_at) == (ScheduleState.DELETED, None)
    for forbidden in ("pause", "resume", "delete"):
        with pytest.raises(WrongState):
            await change(forbidden)  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        await database.write(lambda tx: records.change_schedule(tx, "sch_nope", "pause", START))


async def test_a_claimed_firing_is_undelivered_until_its_run_starts(database: Database) -> None:
    await schedule(database, HOURLY)
    [firing] = await claim(database, START + timedelta(hours=1))
    assert await database.read(records.undelivered) == [firing]
    await database.write(lambda tx: records.firing_started(tx, firing.firing_id, "run_1"))
    assert await database.read(records.undelivered) == []


async def test_a_claimed_firing_is_never_queued_until_its_input_is(database: Database) -> None:
    await schedule(database, HOURLY)
    [firing] = await claim(database, START + timedelta(hours=1))
    assert await database.read(records.never_queued) == [firing]
    await database.write(
        lambda tx: inputs.enqueue(
            tx,
            key=KEY,
            principal="alice",
            text="the firing note",
            idempotency_key=firing.idempotency_key,
            steer=False,
            mode="summary",
            active_run_id="",
            audience=["alice", "bob"],
        )
    )
    assert await database.read(records.never_queued) == []
    assert await database.read(records.undelivered) == [firing]  # queued, its run not started


async def test_ending_a_firing_records_its_outcome_and_announces_it(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    await schedule(database, HOURLY)
    [firing] = await claim(database, START + timedelta(hours=1))
    await database.write(lambda tx: records.firing_started(tx, firing.firing_id, "run_1"))
    await database.write(
        lambda tx: records.end_firing(tx, firing.firing_id, FiringOutcome.SKIPPED, "quiet day")
    )
    last = changed(database_events)[-1].last_firing
    assert last is not None
    assert (last.id, last.outcome, last.run_id, last.detail) == (
        firing.firing_id,
        FiringOutcome.SKIPPED,
        "run_1",
        "quiet day",
    )
    count = len(database_events)
    await database.write(
        lambda tx: records.end_firing(tx, firing.firing_id, FiringOutcome.SENT, "again")
    )
    assert len(database_events) == count  # a second end changes nothing
    [after] = await listed(database)
    assert after.last_firing == last


async def test_a_condition_fires_once_per_occasion(database: Database) -> None:
    condition = TriggerView(TriggerKind.OBSERVATION, "UTC", adapter="ci", match="failed")
    view = await schedule(database, condition)
    assert view.next_fire_at is None

    async def claim_condition() -> records.FiringDelivery | None:
        return await database.write(
            lambda tx: records.claim_condition(tx, view.id, "observation:o1", START, "{}")
        )

    first = await claim_condition()
    assert first is not None and first.matched == "{}"
    assert await claim_condition() is None
