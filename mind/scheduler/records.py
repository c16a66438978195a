"""Scheduled actions and their firings in the store.

Each change is one unit of work (`tx`) with its durable `schedule_changed` event, whose payload
is the action's view after the change (with its latest firing) for the conversation's owner and
members. A firing is claimed before anything runs: its row is inserted in the unit that moves
the action's next due time, and `(schedule_id, occasion)` is unique, so a replayed claim (the
same due time, observation or memory write) finds its row and claims nothing. On PostgreSQL,
where units run concurrently, the due actions are locked `FOR UPDATE SKIP LOCKED` and a
condition's action `FOR UPDATE`; SQLite's single writer serialises the units anyway.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import Select, String, bindparam, cast, exists, literal, select
from sqlalchemy.orm import Session

from mind.errors import NotFound, WrongState
from mind.events.action_views import (
    FiringOutcome,
    FiringView,
    PlanStepView,
    ScheduledActionView,
    ScheduleState,
    TriggerKind,
    TriggerView,
)
from mind.scheduler.model import FIRING_KEY, FiringDelivery
from mind.scheduler.triggers import check_trigger, due_now, first_due, next_due
from mind.store.models import (
    Conversation,
    ConversationMember,
    Firing,
    Input,
    ScheduledAction,
    utcnow,
)
from mind.store.write_tx import WriteTx

SCHEDULE_CHANGED = "schedule_changed"
Change = Literal["pause", "resume", "delete"]
# The states each change may start from.
_CHANGES_FROM: dict[str, tuple[ScheduleState, ...]] = {
    "pause": (ScheduleState.ACTIVE,),
    "resume": (ScheduleState.PAUSED,),
    "delete": (ScheduleState.ACTIVE, ScheduleState.PAUSED, ScheduleState.FINISHED),
}
_ENDED = (ScheduleState.FINISHED.value, ScheduleState.DELETED.value)
_TIME_KINDS = (TriggerKind.AT.value, TriggerKind.INTERVAL.value, TriggerKind.CRON.value)


def create_schedule(
    tx: WriteTx,
    *,
    conversation_key: str,
    owner: str,
    audience: list[str],
    title: str,
    goal: str,
    plan: tuple[PlanStepView, ...],
    trigger: TriggerView,
    source: str,
    now: datetime,
    catch_up: bool | None = None,
    min_interval: float = 60.0,
) -> ScheduledActionView:
    """Store a new active action (`sch_<hex>`) in the caller's unit; InvalidTrigger, with
    nothing written, for a trigger that cannot be scheduled. `catch_up` None: off (the
    caller passes `[scheduler] catch_up` to follow the setting)."""
    check_trigger(trigger, min_interval)
    if trigger.kind == TriggerKind.INTERVAL and trigger.start_at is None:
        # Anchored here, so every later occurrence is a fixed multiple of the interval away.
        trigger = replace(trigger, start_at=now + timedelta(seconds=trigger.every_seconds))
    row = ScheduledAction(
        id=f"sch_{uuid.uuid4().hex}",
        conversation_key=conversation_key,
        owner=owner,
        title=title,
        goal=goal,
        plan=[step.to_payload() for step in plan],
        trigger=trigger.to_payload(),
        trigger_kind=trigger.kind.value,
        state=ScheduleState.ACTIVE.value,
        next_fire_at=first_due(trigger, now),
        catch_up=bool(catch_up),
        firing_count=0,
        source=source,
        created_at=now,
        updated_at=now,
    )
    tx.session.add(row)
    tx.session.flush()
    view = scheduled_view(row, None)
    tx.event(SCHEDULE_CHANGED, conversation_key, audience, view.to_payload())
    return view


def list_schedules(
    session: Session, conversation_key: str | None, include_ended: bool
) -> list[ScheduledActionView]:
    """Actions oldest first (of one conversation, or all); finished and deleted ones only with
    `include_ended`."""
    query = _LISTINGS[(conversation_key is not None, include_ended)]
    rows = list(
        session.scalars(query, {"key": conversation_key} if conversation_key is not None else {})
    )
    return [
        scheduled_view(row, last) for row, last in zip(rows, _latest(session, rows), strict=True)
    ]


def _listing(by_conversation: bool, include_ended: bool) -> Select[ScheduledAction]:
    query = select(ScheduledAction).order_by(ScheduledAction.created_at, ScheduledAction.id)
    if by_conversation:
        query = query.where(ScheduledAction.conversation_key == bindparam("key"))
    if not include_ended:
        query = query.where(ScheduledAction.state.not_in(_ENDED))
    return query


# Built once: the decision layer lists a conversation's live actions on every input.
_LISTINGS = {(by, ended): _listing(by, ended) for by in (False, True) for ended in (False, True)}


def get_schedule(session: Session, schedule_id: str) -> tuple[str, ScheduledActionView]:
    """The action's owner and view; NotFound for an unknown id."""
    row = session.get(ScheduledAction, schedule_id)
    if row is None:
        raise NotFound(f"no scheduled action {schedule_id!r}")
    return row.owner, scheduled_view(row, _latest(session, [row])[0])


def change_schedule(
    tx: WriteTx, schedule_id: str, change: Change, now: datetime
) -> ScheduledActionView:
    """Pause, resume or delete; WrongState when its state forbids the change (nothing
    resumes a deleted or finished action), NotFound for an unknown id. A resumed
    interval or cron is due next at its first occurrence after `now` (what it missed while
    paused is not fired); a resumed one-time action keeps its time, so one whose time passed
    while paused fires at once."""
    session = tx.session
    row = session.get(ScheduledAction, schedule_id, with_for_update=True)
    if row is None:
        raise NotFound(f"no scheduled action {schedule_id!r}")
    if ScheduleState(row.state) not in _CHANGES_FROM[change]:
        raise WrongState(f"cannot {change} scheduled action {schedule_id}: it is {row.state}")
    trigger = TriggerView.from_payload(row.trigger)
    match change:
        case "pause":
            row.state, row.next_fire_at = ScheduleState.PAUSED.value, None
        case "resume":
            row.state = ScheduleState.ACTIVE.value
            row.next_fire_at = _resumed_due(trigger, now)
        case "delete":
            row.state, row.next_fire_at = ScheduleState.DELETED.value, None
    row.updated_at = now
    return _announce(tx, row)


def due_conversations(session: Session, now: datetime) -> list[str]:
    """The conversations with a time-triggered action due at `now`."""
    return list(
        session.scalars(
            select(ScheduledAction.conversation_key)
            .where(
                ScheduledAction.state == ScheduleState.ACTIVE.value,
                ScheduledAction.trigger_kind.in_(_TIME_KINDS),
                ScheduledAction.next_fire_at <= now,
            )
            .distinct()
        )
    )


def claim_due(
    tx: WriteTx, now: datetime, keys: Collection[str] | None = None
) -> list[FiringDelivery]:
    """Claim one firing of each active time-triggered action due at `now`: the firing row,
    the next due time, the count and, for a one-time trigger, the end, in this unit."""
    session = tx.session
    rows = session.scalars(
        select(ScheduledAction)
        .where(
            ScheduledAction.state == ScheduleState.ACTIVE.value,
            ScheduledAction.trigger_kind.in_(_TIME_KINDS),
            ScheduledAction.next_fire_at <= now,
            *([ScheduledAction.conversation_key.in_(keys)] if keys is not None else []),
        )
        .order_by(ScheduledAction.next_fire_at)
        .with_for_update(skip_locked=True)
    )
    claimed = []
    for row in list(rows):
        assert row.next_fire_at is not None
        trigger = TriggerView.from_payload(row.trigger)
        due = due_now(trigger, row.next_fire_at, now, row.catch_up)
        row.next_fire_at = next_due(trigger, due, now, row.catch_up)
        if row.next_fire_at is None:
            row.state = ScheduleState.FINISHED.value
        firing = _claim(tx, row, f"time:{due.isoformat()}", due, now, "")
        if firing is not None:
            claimed.append(firing)
    return claimed


def claim_condition(
    tx: WriteTx, schedule_id: str, occasion: str, due_at: datetime, matched: str
) -> FiringDelivery | None:
    """Claim a condition's firing for `occasion` (`observation:<id>`, `memory:<outbox id>`);
    None when that occasion already fired it, or the action is no longer active."""
    row = tx.session.get(ScheduledAction, schedule_id, with_for_update=True)
    if row is None or row.state != ScheduleState.ACTIVE.value:
        return None
    return _claim(tx, row, occasion, due_at, due_at, matched)


def firing_started(tx: WriteTx, firing_id: int, run_id: str) -> None:
    """The firing's input (or a retry's) was delivered to run `run_id`, its latest attempt:
    no redelivery at the next start. A firing that already ended counts no attempt."""
    firing = tx.session.get(Firing, firing_id, with_for_update=True)
    if firing is not None and firing.ended_at is None:
        firing.run_id = run_id
        firing.attempts += 1


def running_firing(tx: WriteTx, run_id: str) -> Firing | None:
    """The firing whose latest attempt is run `run_id`, while it has not ended."""
    return tx.session.scalar(
        select(Firing)
        .where(Firing.run_id == run_id, Firing.outcome == FiringOutcome.RUNNING.value)
        .with_for_update()
    )


def firing_open(tx: WriteTx, firing_id: int) -> bool:
    """Whether the firing has not ended yet (its row locked for the rest of the unit): what
    is posted with its end is posted only while it is open, so once per firing."""
    firing = tx.session.get(Firing, firing_id, with_for_update=True)
    return firing is not None and firing.ended_at is None


def end_firing(tx: WriteTx, firing_id: int, outcome: FiringOutcome, detail: str) -> None:
    """Record how the firing ended (once: a second end changes nothing)."""
    firing = tx.session.get(Firing, firing_id, with_for_update=True)
    if firing is None or firing.ended_at is not None:
        return
    firing.outcome, firing.detail = outcome.value, detail
    firing.ended_at = utcnow()
    row = tx.session.get(ScheduledAction, firing.schedule_id)
    if row is not None:
        _announce(tx, row)


def delivery_of(session: Session, firing: Firing) -> FiringDelivery | None:
    """What a firing's conversation gets, again (for a retry); None when its action is gone."""
    row = session.get(ScheduledAction, firing.schedule_id)
    return _delivery(row, firing) if row is not None else None


def undelivered(session: Session) -> list[FiringDelivery]:
    """Firings claimed but never delivered to a run (still running, no run id), oldest first:
    the scheduler delivers them again at its start; delivery is idempotent by key."""
    pairs = session.execute(
        select(Firing, ScheduledAction)
        .join(ScheduledAction, ScheduledAction.id == Firing.schedule_id)
        .where(Firing.outcome == FiringOutcome.RUNNING.value, Firing.run_id == "")
        .order_by(Firing.id)
    )
    return [_delivery(row, firing) for firing, row in pairs]


def never_queued(session: Session) -> list[FiringDelivery]:
    """Undelivered firings whose input was never queued, oldest first: on a database several
    Minds share, those a Mind claimed and then died (or failed) before delivering; whoever
    serves their conversation now delivers them."""
    queued = exists().where(
        Input.conversation_key == Firing.conversation_key,
        Input.idempotency_key == literal(FIRING_KEY) + cast(Firing.id, String),
    )
    pairs = session.execute(
        select(Firing, ScheduledAction)
        .join(ScheduledAction, ScheduledAction.id == Firing.schedule_id)
        .where(Firing.outcome == FiringOutcome.RUNNING.value, Firing.run_id == "", ~queued)
        .order_by(Firing.id)
    )
    return [_delivery(row, firing) for firing, row in pairs]


def earliest_due(session: Session) -> datetime | None:
    """The next due time of all active time-triggered actions."""
    return session.scalar(
        select(ScheduledAction.next_fire_at)
        .where(
            ScheduledAction.state == ScheduleState.ACTIVE.value,
            ScheduledAction.next_fire_at.is_not(None),
        )
        .order_by(ScheduledAction.next_fire_at)
        .limit(1)
    )


@dataclass(frozen=True)
class Watching:
    """An active action waiting for a condition."""

    schedule_id: str
    owner: str
    conversation_key: str
    trigger: TriggerView


def active_conditions(session: Session, kind: TriggerKind) -> list[Watching]:
    """Each active action watching for `kind`, oldest first."""
    rows = session.scalars(
        select(ScheduledAction)
        .where(
            ScheduledAction.state == ScheduleState.ACTIVE.value,
            ScheduledAction.trigger_kind == kind.value,
        )
        .order_by(ScheduledAction.created_at, ScheduledAction.id)
    )
    return [
        Watching(row.id, row.owner, row.conversation_key, TriggerView.from_payload(row.trigger))
        for row in rows
    ]


def scheduled_view(row: ScheduledAction, last: Firing | None) -> ScheduledActionView:
    return ScheduledActionView(
        id=row.id,
        conversation_key=row.conversation_key,
        title=row.title,
        goal=row.goal,
        plan=tuple(PlanStepView.from_payload(step) for step in row.plan),
        trigger=TriggerView.from_payload(row.trigger),
        state=ScheduleState(row.state),
        next_fire_at=row.next_fire_at,
        created_at=row.created_at,
        firing_count=row.firing_count,
        last_firing=firing_view(last) if last is not None else None,
        catch_up=row.catch_up,
    )


def firing_view(firing: Firing) -> FiringView:
    return FiringView(
        id=firing.id,
        schedule_id=firing.schedule_id,
        due_at=firing.due_at,
        claimed_at=firing.claimed_at,
        outcome=FiringOutcome(firing.outcome),
        run_id=firing.run_id,
        detail=firing.detail,
    )


def _claim(
    tx: WriteTx,
    row: ScheduledAction,
    occasion: str,
    due_at: datetime,
    now: datetime,
    matched: str,
) -> FiringDelivery | None:
    session = tx.session
    taken = session.scalar(
        select(Firing.id).where(Firing.schedule_id == row.id, Firing.occasion == occasion)
    )
    if taken is not None:
        return None
    firing = Firing(
        schedule_id=row.id,
        conversation_key=row.conversation_key,
        occasion=occasion,
        due_at=due_at,
        claimed_at=now,
        outcome=FiringOutcome.RUNNING.value,
        run_id="",
        detail=matched,
    )
    session.add(firing)
    row.firing_count += 1
    row.updated_at = now
    session.flush()
    _announce(tx, row, firing)
    return _delivery(row, firing)


def _announce(tx: WriteTx, row: ScheduledAction, last: Firing | None = None) -> ScheduledActionView:
    session = tx.session
    session.flush()
    latest = last if last is not None else _latest(session, [row])[0]
    view = scheduled_view(row, latest)
    tx.event(
        SCHEDULE_CHANGED,
        row.conversation_key,
        audience_of(session, row.conversation_key),
        view.to_payload(),
    )
    return view


def audience_of(session: Session, conversation_key: str) -> list[str]:
    """The conversation's owner and members (none when it is gone)."""
    owner = session.scalar(select(Conversation.owner).where(Conversation.key == conversation_key))
    if owner is None:
        return []
    members = session.scalars(
        select(ConversationMember.principal)
        .where(ConversationMember.conversation_key == conversation_key)
        .order_by(ConversationMember.principal)
    )
    return [owner, *members]


def _latest(session: Session, rows: Iterable[ScheduledAction]) -> list[Firing | None]:
    """Each action's latest firing (by id), in the order of `rows`."""
    ids = [row.id for row in rows]
    found: dict[str, Firing] = {}
    if ids:
        for firing in session.scalars(
            select(Firing).where(Firing.schedule_id.in_(ids)).order_by(Firing.id)
        ):
            found[firing.schedule_id] = firing
    return [found.get(schedule_id) for schedule_id in ids]


def _delivery(row: ScheduledAction, firing: Firing) -> FiringDelivery:
    return FiringDelivery(
        firing_id=firing.id,
        schedule_id=row.id,
        conversation_key=row.conversation_key,
        owner=row.owner,
        title=row.title,
        goal=row.goal,
        plan=tuple(PlanStepView.from_payload(step) for step in row.plan),
        trigger=TriggerView.from_payload(row.trigger),
        due_at=firing.due_at,
        matched=firing.detail if firing.outcome == FiringOutcome.RUNNING.value else "",
    )


def _resumed_due(trigger: TriggerView, now: datetime) -> datetime | None:
    if trigger.kind == TriggerKind.AT:
        return first_due(trigger, now)
    return next_due(trigger, now, now, catch_up=False)
