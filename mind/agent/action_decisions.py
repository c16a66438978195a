"""An owner's decision on a pending action made outside the chat (`Mind.DecideAction`).

Every decision is an input of the conversation keyed by the request's idempotency key (the
key space of SendChat), so a retry answers the first decision, even across a restart:

* confirm of an immediate action, and amend: a queued input from the owner (its `source`
  names the action and the decision) committed in one unit with the action's change; its
  run executes the stored plan, or evaluates and plans the amended goal
  (`DecisionLayer.take_up`);
* cancel, and confirm of a planned action: the input is recorded `dropped` (it starts no
  run), in the unit that changes the action (and, for a planned one, creates its scheduled
  action).

An action past its `expires_at` is marked expired in a unit of its own first, and the
decision refused with FAILED_PRECONDITION.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mind.actions import records
from mind.actions.layer import DecisionLayer
from mind.actions.model import PendingChoice
from mind.conversation import inputs, sources
from mind.errors import InvalidInput, WrongState
from mind.events.action_views import (
    ActionTiming,
    PendingActionView,
    PendingState,
    ScheduledActionView,
)
from mind.store.write_tx import WriteTx

_VERBS = {
    PendingChoice.CONFIRM: "Confirmed",
    PendingChoice.CANCEL: "Declined",
    PendingChoice.AMEND: "Amended",
}


@dataclass(frozen=True)
class DecideResult:
    action: PendingActionView
    # The run that executes or re-plans it ("" while queued, and for a cancel or a planned
    # action's confirmation).
    run_id: str = ""
    scheduled: ScheduledActionView | None = None


class Route(StrEnum):
    """How a decision is carried out: by a run, or at once."""

    RUN = "run"
    AT_ONCE = "at_once"


def route(action: PendingActionView, choice: PendingChoice) -> Route:
    if choice is PendingChoice.AMEND:
        return Route.RUN
    if choice is PendingChoice.CONFIRM and action.timing is ActionTiming.IMMEDIATE:
        return Route.RUN
    return Route.AT_ONCE


def source(action_id: str, choice: PendingChoice, amendment: str) -> sources.DecisionSource:
    return sources.DecisionSource(action_id, choice.value, amendment)


def text(action: PendingActionView, choice: PendingChoice, amendment: str) -> str:
    said = f"{_VERBS[choice]}: {action.title} [{action.id}]"
    return f"{said}: {amendment}" if amendment else said


def decided_by(row: Any) -> str:
    """The action an input's decision was about; InvalidInput when the key was used for a
    message instead."""
    found = sources.from_json(row.source)
    if not isinstance(found, sources.DecisionSource):
        raise InvalidInput(
            "idempotency_key was already used for a message of this conversation; use a new "
            "key for a decision"
        )
    return found.action_id


def in_run_unit(
    layer: DecisionLayer, action_id: str, choice: PendingChoice
) -> Callable[[WriteTx, str], None]:
    """What the accepting unit of a decision carried out by a run does with the action: a
    confirmation is taken (the run executes it); an amendment only checks that it is still
    pending (its run marks it amended, with what replaced it)."""

    def also(tx: WriteTx, run_id: str) -> None:
        if choice is PendingChoice.CONFIRM:
            now = layer.clock.now()
            records.decide(tx, action_id, PendingState.CONFIRMED, now=now, outcome=run_id)
            return
        row = records.find(tx.session, action_id)
        if row.state != PendingState.PENDING:
            raise WrongState(f"action {action_id} was already {row.state}")

    return also


def at_once(
    tx: WriteTx,
    layer: DecisionLayer,
    action: PendingActionView,
    choice: PendingChoice,
    audience: list[str],
) -> ScheduledActionView | None:
    """Cancel, or confirm a planned action (creating its scheduled action), in `tx`."""
    now = layer.clock.now()
    if choice is PendingChoice.CANCEL:
        records.decide(tx, action.id, PendingState.CANCELLED, now=now)
        return None
    assert action.trigger is not None
    scheduled = layer.schedule(
        tx,
        conversation_key=action.conversation_key,
        owner=audience[0],
        audience=audience,
        title=action.title,
        goal=action.goal,
        plan=action.plan,
        trigger=action.trigger,
        source=action.id,
        now=now,
    )
    records.decide(tx, action.id, PendingState.CONFIRMED, now=now, outcome=scheduled.id)
    return scheduled


def record_input(
    tx: WriteTx,
    key: str,
    owner: str,
    idempotency_key: str,
    action: PendingActionView,
    choice: PendingChoice,
) -> None:
    """The decision's input, kept for its idempotency key only: it starts no run."""
    inputs.accept(
        tx,
        key=key,
        principal=owner,
        text=text(action, choice, ""),
        idempotency_key=idempotency_key,
        steer=False,
        mode="summary",
        source=source(action.id, choice, ""),
        state="dropped",
    )
