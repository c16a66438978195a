"""Pending confirmations in the store (`pending_actions`).

Each change is part of one unit of work with its durable `action_changed` event (the view's
payload) for the conversation's owner and members. A decision is a compare-and-set on
`state = 'pending'`: an action is confirmed, cancelled, amended or expired once, and a
second decision is refused with `WrongState` (FAILED_PRECONDITION). An action whose
`expires_at` passed is marked expired by whoever reads it for a decision first (`expire_if_due`)
or by the scheduler's loop (`mind.actions.expiry`).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from mind.conversation import queries
from mind.errors import NotFound, WrongState
from mind.events.action_views import (
    ActionTiming,
    PendingActionView,
    PendingState,
    PlanStepView,
    TriggerView,
)
from mind.store.models import Conversation, PendingAction
from mind.store.write_tx import WriteTx

ACTION_CHANGED = "action_changed"


def new_id() -> str:
    return f"act_{uuid.uuid4().hex}"


def view_of(row: PendingAction) -> PendingActionView:
    return PendingActionView(
        id=row.id,
        conversation_key=row.conversation_key,
        title=row.title,
        goal=row.goal,
        state=PendingState(row.state),
        timing=ActionTiming(row.timing),
        plan=tuple(PlanStepView.from_payload(step) for step in row.plan),
        trigger=TriggerView.from_payload(row.trigger) if row.trigger else None,
        reason=row.reason,
        created_at=row.created_at,
        expires_at=row.expires_at,
        decided_at=row.decided_at,
        outcome=row.outcome,
    )


def audience_of(session: Session, conversation_key: str) -> list[str]:
    owner = session.scalar(select(Conversation.owner).where(Conversation.key == conversation_key))
    members = queries.members_of(session, conversation_key)
    return [owner, *members] if owner is not None else members


def _announce(tx: WriteTx, row: PendingAction) -> PendingActionView:
    view = view_of(row)
    tx.event(
        ACTION_CHANGED,
        row.conversation_key,
        audience_of(tx.session, row.conversation_key),
        view.to_payload(),
    )
    return view


def create(
    tx: WriteTx,
    *,
    conversation_key: str,
    owner: str,
    run_id: str,
    title: str,
    goal: str,
    timing: ActionTiming,
    plan: Sequence[PlanStepView],
    trigger: TriggerView | None,
    reason: str,
    now: datetime,
    ttl: float,
) -> PendingActionView:
    """Register an action waiting for its owner, expiring `ttl` seconds from `now`."""
    row = PendingAction(
        id=new_id(),
        conversation_key=conversation_key,
        owner=owner,
        run_id=run_id,
        title=title,
        goal=goal,
        timing=timing.value,
        plan=[step.to_payload() for step in plan],
        trigger=trigger.to_payload() if trigger is not None else None,
        reason=reason,
        state=PendingState.PENDING.value,
        created_at=now,
        expires_at=now + timedelta(seconds=ttl),
        outcome="",
    )
    tx.session.add(row)
    tx.session.flush()
    return _announce(tx, row)


def listing(
    session: Session, conversation_key: str, *, pending_only: bool
) -> list[PendingActionView]:
    """The conversation's actions, oldest first; only the pending ones with `pending_only`."""
    query = _PENDING_OF_CONVERSATION if pending_only else _OF_CONVERSATION
    return [view_of(row) for row in session.scalars(query, {"key": conversation_key})]


# Built once: the decision layer lists a conversation's pending actions on every input.
_OF_CONVERSATION = (
    select(PendingAction)
    .where(PendingAction.conversation_key == bindparam("key"))
    .order_by(PendingAction.created_at, PendingAction.id)
)
_PENDING_OF_CONVERSATION = _OF_CONVERSATION.where(PendingAction.state == PendingState.PENDING.value)


def waiting(session: Session, conversation_key: str, now: datetime) -> list[PendingActionView]:
    """The actions still waiting at `now` (an expired one may not be marked yet)."""
    pending = listing(session, conversation_key, pending_only=True)
    return [action for action in pending if action.expires_at > now]


def find(session: Session, action_id: str) -> PendingAction:
    row = session.get(PendingAction, action_id)
    if row is None:
        raise NotFound(f"no pending action {action_id!r}")
    return row


def decide(
    tx: WriteTx, action_id: str, state: PendingState, *, now: datetime, outcome: str = ""
) -> PendingActionView:
    """Move a pending action to `state` (compare-and-set); WrongState when it is no longer
    pending, or when it expired (call `expire_if_due` first, in a unit of its own, so that the
    expiry is kept when this refusal rolls its unit back)."""
    row = find(tx.session, action_id)
    if row.state == PendingState.PENDING and row.expires_at <= now:
        raise WrongState(f"action {action_id} expired at {row.expires_at.isoformat()}")
    return _move(tx, row, state, now, outcome)


def _move(
    tx: WriteTx, row: PendingAction, state: PendingState, now: datetime, outcome: str
) -> PendingActionView:
    changed = tx.session.execute(
        update(PendingAction)
        .where(PendingAction.id == row.id, PendingAction.state == PendingState.PENDING.value)
        .values(state=state.value, decided_at=now, outcome=outcome)
        .execution_options(synchronize_session=False)
    )
    tx.session.refresh(row)
    if changed.rowcount != 1:  # type: ignore[attr-defined]
        raise WrongState(f"action {row.id} was already {row.state}")
    return _announce(tx, row)


def set_outcome(tx: WriteTx, action_id: str, outcome: str) -> PendingActionView:
    """Name what taking up an action led to, once it is known (an amendment's replacement)."""
    row = find(tx.session, action_id)
    row.outcome = outcome
    tx.session.flush()
    return _announce(tx, row)


def expire_if_due(tx: WriteTx, action_id: str, now: datetime) -> PendingActionView | None:
    """Mark the action expired when it is pending past its `expires_at`; its view then."""
    row = find(tx.session, action_id)
    if row.state != PendingState.PENDING or row.expires_at > now:
        return None
    return _move(tx, row, PendingState.EXPIRED, now, "")


def expiring_conversations(session: Session, now: datetime) -> list[str]:
    """The conversations with a pending action past its `expires_at`."""
    query = select(PendingAction.conversation_key).where(
        PendingAction.state == PendingState.PENDING.value, PendingAction.expires_at <= now
    )
    return list(session.scalars(query.distinct()))


def expire_due(
    tx: WriteTx, now: datetime, keys: Collection[str] | None = None
) -> list[PendingActionView]:
    """Mark every pending action past its `expires_at` expired (of conversations `keys`, if
    given)."""
    rows = tx.session.scalars(
        select(PendingAction.id).where(
            PendingAction.state == PendingState.PENDING.value,
            PendingAction.expires_at <= now,
            *([PendingAction.conversation_key.in_(keys)] if keys is not None else []),
        )
    ).all()
    return [view for action_id in rows if (view := expire_if_due(tx, action_id, now))]


def next_expiry(session: Session) -> datetime | None:
    return session.scalar(
        select(PendingAction.expires_at)
        .where(PendingAction.state == PendingState.PENDING.value)
        .order_by(PendingAction.expires_at)
        .limit(1)
    )
