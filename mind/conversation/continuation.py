"""Tool calls a stop or crash left open continue in a new run of their conversation.

A call is *open* when its projection is still `running` while its run is not, and it either
waits on an approval or already has a Hand task or a child run (`delegate`; below, "task"
covers both). Recovery (and a graceful stop) keep such calls
open (`open_call_ids`) while recording their run as interrupted; every other running call ends
`cancelled`. Then:

* a call that already has a task is reconciled with it at start: the continuation waits for
  that task's terminal (or takes the one already recorded) and never offers the call again —
  the work may already have happened on the Hand, and it happens at most once;
* a call whose approval is decided (and that has no task yet) runs at start;
* a call whose approval is pending continues when its decision (or expiry) is committed — the
  Broker reports decisions no execution was waiting for to
  `mind.approvals.continuation.Continuation.on_decision`.

Continuing means a new run of the conversation (trigger `approval` or `recovery`, except that
an observation's run keeps its `observation:<trust>`, which the approval policy judges it by;
same principal, detail mode, permissions and origin as the interrupted run) that first
finishes the interrupted tool batch — the open call gets its one terminal, a denied one
returns the reason to the model — then calls the model again, as the interrupted run would
have (`mind.agent.batches` finishes the batch).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import Session, aliased

from mind.conversation import runs
from mind.store.models import Approval, Delegation, Input, Run, Task, ToolProjection

log = logging.getLogger(__name__)

# The mark in a call id that profile code, not the model, made the call
# (`mind.agent.platform_data`): such a call never stays open.
CODE_CALL_MARK = "~"

# Run triggers: continuing a call that waited on an approval, or reconciling one with its task.
APPROVAL_TRIGGER = "approval"
RECOVERY_TRIGGER = "recovery"


@dataclass(frozen=True)
class OpenCall:
    conversation_key: str
    tool_call_id: str
    run_id: str
    # Whether it can continue now: it has a task, or its approval is decided.
    ready: bool


def _has_task() -> ColumnElement[bool]:
    """The call already has an execution: a Hand task, or a child run it delegated to
    (`mind.conversation.delegations`); either ran, or runs, at most once."""
    task = (
        select(Task.id)
        .where(Task.tool_call_id == ToolProjection.tool_call_id)
        .correlate(ToolProjection)
        .exists()
    )
    child = (
        select(Delegation.tool_call_id)
        .where(Delegation.tool_call_id == ToolProjection.tool_call_id)
        .correlate(ToolProjection)
        .exists()
    )
    return or_(task, child)


def _is_open() -> ColumnElement[bool]:
    """An open call waits on an approval or already has a Hand task, and the model made it
    (a call profile code made, `~` in its id, ends with its run: `mind.agent.platform_data`)."""
    approval = aliased(Approval)
    has_approval = (
        select(approval.id)
        .where(approval.tool_call_id == ToolProjection.tool_call_id)
        .correlate(ToolProjection)
        .exists()
    )
    return and_(
        or_(has_approval, _has_task()), ~ToolProjection.tool_call_id.contains(CODE_CALL_MARK)
    )


def open_call_ids(session: Session, run_id: str) -> list[str]:
    """Running calls of `run_id` that must stay open when the run ends without finishing them."""
    rows = session.scalars(
        select(ToolProjection.tool_call_id).where(
            ToolProjection.run_id == run_id, ToolProjection.status == "running", _is_open()
        )
    )
    return list(rows)


def interrupted_open_calls(session: Session) -> list[OpenCall]:
    """Open calls left by runs that are no longer running, oldest first."""
    rows = session.execute(
        select(
            ToolProjection.conversation_key,
            ToolProjection.tool_call_id,
            ToolProjection.run_id,
            _has_task().label("has_task"),
            Approval.decision,
        )
        .join(Run, Run.id == ToolProjection.run_id)
        .outerjoin(Approval, Approval.tool_call_id == ToolProjection.tool_call_id)
        .where(ToolProjection.status == "running", Run.state != "running", _is_open())
        .order_by(ToolProjection.admitted_at)
    )
    return [
        OpenCall(key, call_id, run_id, bool(has_task) or decision is not None)
        for key, call_id, run_id, has_task, decision in rows
    ]


@dataclass(frozen=True)
class Origin:
    """What the continuation run inherits from the interrupted run."""

    run_id: str
    principal: str
    detail_mode: str
    permissions: dict[str, bool]
    trigger: str
    # What started the interrupted run (`mind.conversation.origins`).
    origin: str


def origin_of(session: Session, tool_call_id: str) -> Origin | None:
    """The interrupted run of an open call; None when the call is not open."""
    found = session.execute(
        select(Run, Approval.decided_by, _has_task().label("has_task"))
        .join(ToolProjection, ToolProjection.run_id == Run.id)
        .outerjoin(Approval, Approval.tool_call_id == ToolProjection.tool_call_id)
        .where(
            ToolProjection.tool_call_id == tool_call_id,
            ToolProjection.status == "running",
            Run.state != "running",
            _is_open(),
        )
    ).first()
    if found is None:
        return None
    run, decided_by, has_task = found
    principal = session.scalar(
        select(Input.principal).where(Input.run_id == run.id).order_by(Input.id).limit(1)
    )
    if runs.is_observation(run.trigger):
        trigger = run.trigger
    else:
        trigger = RECOVERY_TRIGGER if has_task else APPROVAL_TRIGGER
    return Origin(
        run.id,
        principal or decided_by or "",
        run.detail_mode,
        dict(run.permissions),
        trigger,
        run.origin,
    )
