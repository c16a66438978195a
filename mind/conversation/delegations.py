"""Child runs: what a `delegate` call started, and the one result its parent takes.

A delegating call starts its child in one unit of work (`start`): the child's own
conversation (`p_sub_…`, owned by the principal of the parent's run, left out of every
listing: `is_child`), the task as the child's queued input, and the `delegations` row keyed
by the call's id. A replayed call finds the row and starts nothing more. The child's run is
an ordinary run of its conversation, so a crash ends it as any run (interrupted, its open
calls continued by the next start).

The row ends inside the unit that ends the child's run (`run_ended`, called by
`mind.conversation.runs.finish`): a completed run's last answer, or what ended it — failed,
cancelled, or interrupted without an open call to continue (a child left mid-step by a crash
fails cleanly rather than running its steps again). An interrupted run whose open calls
continue leaves the row running: the continuation run ends it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.conversation import inputs
from mind.conversation.sources import PersonSource
from mind.events.views import RunState
from mind.store import models
from mind.store.write_tx import WriteTx

CHILD_PREFIX = "p_sub_"

RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
CANCELLED = "cancelled"


def child_key_of(tool_call_id: str) -> str:
    """The child conversation of a delegating call: derived from the call's id alone."""
    return CHILD_PREFIX + hashlib.sha256(tool_call_id.encode()).hexdigest()[:32]


def task_key(tool_call_id: str) -> str:
    """The idempotency key of the child's task input."""
    return f"delegate:{tool_call_id}"


@dataclass(frozen=True)
class ChildBrief:
    """What the runs of a child conversation may do."""

    tool_call_id: str
    parent_key: str
    principal: str
    tools: frozenset[str]
    depth: int
    max_turns: int
    max_tokens: int
    deadline_at: datetime


@dataclass(frozen=True)
class Ending:
    """A child's end as its parent's call takes it."""

    state: str
    result: str

    @property
    def ok(self) -> bool:
        return self.state == SUCCEEDED


def brief(row: models.Delegation) -> ChildBrief:
    return ChildBrief(
        tool_call_id=row.tool_call_id,
        parent_key=row.parent_key,
        principal=row.principal,
        tools=frozenset(row.tools),
        depth=row.depth,
        max_turns=row.max_turns,
        max_tokens=row.max_tokens,
        deadline_at=row.deadline_at,
    )


def start(
    tx: WriteTx,
    *,
    tool_call_id: str,
    parent_key: str,
    parent_run_id: str,
    principal: str,
    task: str,
    profile: str,
    mode: str,
    tools: frozenset[str],
    depth: int,
    max_turns: int,
    max_tokens: int,
    deadline_at: datetime,
) -> models.Delegation:
    """Start the child of `tool_call_id` (see the module docstring); the existing row when
    the call already started one."""
    existing = tx.session.get(models.Delegation, tool_call_id)
    if existing is not None:
        return existing
    child = child_key_of(tool_call_id)
    tx.insert(
        models.Conversation(
            key=child,
            owner=principal,
            title=task[:80],
            profile=profile,
            created_at=datetime.now(UTC),
        )
    )
    row = tx.insert(
        models.Delegation(
            tool_call_id=tool_call_id,
            parent_key=parent_key,
            parent_run_id=parent_run_id,
            child_key=child,
            principal=principal,
            task=task,
            tools=sorted(tools),
            depth=depth,
            max_turns=max_turns,
            max_tokens=max_tokens,
            deadline_at=deadline_at,
            state=RUNNING,
            result="",
            created_at=datetime.now(UTC),
        )
    )
    inputs.enqueue(
        tx,
        key=child,
        principal=principal,
        text=task,
        idempotency_key=task_key(tool_call_id),
        steer=False,
        mode=mode,
        active_run_id="",
        audience=[principal],
        source=PersonSource(),
    )
    return row


def of_call(session: Session, tool_call_id: str) -> models.Delegation | None:
    return session.get(models.Delegation, tool_call_id)


def of_child(session: Session, child_key: str) -> models.Delegation | None:
    return session.scalar(select(models.Delegation).where(models.Delegation.child_key == child_key))


def ending(row: models.Delegation | None) -> Ending | None:
    """The end of a delegation row; None while its child runs (or without a row)."""
    if row is None or row.state == RUNNING:
        return None
    return Ending(row.state, row.result)


def count_step(tx: WriteTx, conversation_key: str, tokens: int) -> None:
    """Add one model step of `tokens` to what a child conversation's runs have spent (called
    in the unit storing the step, so a restart never gives the child its budget again)."""
    if not conversation_key.startswith(CHILD_PREFIX):
        return
    row = of_child(tx.session, conversation_key)
    if row is not None:
        row.turns_used += 1
        row.tokens_used += tokens


def spent(session: Session, conversation_key: str) -> tuple[int, int]:
    """(turns, tokens) a child conversation's runs have spent so far."""
    row = of_child(session, conversation_key)
    return (row.turns_used, row.tokens_used) if row is not None else (0, 0)


def shown_in(session: Session, conversation_key: str) -> tuple[str, str]:
    """Where a person watches conversation `conversation_key`'s requests: the top of its chain
    of children, and the `delegate` call there whose child (or grandchild) it is; a
    conversation that is no child watches itself (`(key, "")`)."""
    key, call = conversation_key, ""
    while key.startswith(CHILD_PREFIX) and (row := of_child(session, key)) is not None:
        key, call = row.parent_key, row.tool_call_id
    return key, call


def read_sensitive(session: Session, run_id: str, sensitive: Iterable[str]) -> bool:
    """Whether run `run_id` has called one of its `sensitive` tools (a task it writes for a
    child could then carry what the call returned)."""
    found = session.scalar(
        select(models.ToolProjection.tool_call_id)
        .where(
            models.ToolProjection.run_id == run_id,
            models.ToolProjection.tool.in_(list(sensitive)),
        )
        .limit(1)
    )
    return found is not None


def is_child(key_column: Any) -> Any:
    """A condition on a conversation key column: the conversation is a child's."""
    return key_column.in_(select(models.Delegation.child_key))


def children_of(session: Session, parent_key: str) -> list[str]:
    """The child conversations of `parent_key`'s calls, and theirs, deepest last."""
    found: list[str] = []
    parents = [parent_key]
    while parents:
        keys = list(
            session.scalars(
                select(models.Delegation.child_key).where(models.Delegation.parent_key.in_(parents))
            )
        )
        found.extend(keys)
        parents = keys
    return found


def running_children(session: Session) -> list[tuple[str, str, str]]:
    """(tool call id, parent key, child key) of every delegation whose child still runs."""
    rows = session.execute(
        select(
            models.Delegation.tool_call_id,
            models.Delegation.parent_key,
            models.Delegation.child_key,
        ).where(models.Delegation.state == RUNNING)
    )
    return [(call, parent, child) for call, parent, child in rows]


def ended_with_pending_approvals(session: Session) -> list[str]:
    """Child conversations whose delegation ended while an approval of theirs is pending."""
    rows = session.scalars(
        select(models.Delegation.child_key)
        .join(models.Approval, models.Approval.conversation_key == models.Delegation.child_key)
        .where(models.Delegation.state != RUNNING, models.Approval.decision.is_(None))
        .distinct()
    )
    return list(rows)


def _answer(session: Session, child_key: str) -> str:
    text = session.scalar(
        select(models.Message.text)
        .where(
            models.Message.conversation_key == child_key,
            models.Message.role == "assistant",
            models.Message.text != "",
        )
        .order_by(models.Message.id.desc())
        .limit(1)
    )
    return text or "(the child ended without an answer)"


def run_ended(
    tx: WriteTx, conversation_key: str, state: RunState, reason: str, kept_open: bool
) -> None:
    """End the delegation of a child conversation whose run just ended (module docstring)."""
    if not conversation_key.startswith(CHILD_PREFIX):
        return
    row = of_child(tx.session, conversation_key)
    if row is None or row.state != RUNNING:
        return
    if state is RunState.INTERRUPTED and kept_open:
        return
    match state:
        case RunState.COMPLETED:
            row.state, row.result = SUCCEEDED, _answer(tx.session, conversation_key)
        case RunState.CANCELLED:
            row.state, row.result = CANCELLED, f"the child run was cancelled: {reason}"
        case RunState.INTERRUPTED:
            row.state = FAILED
            row.result = f"the child run was interrupted before it finished ({reason})"
        case _:
            row.state, row.result = FAILED, f"the child run failed: {reason}"
    row.finished_at = datetime.now(UTC)


def end(tx: WriteTx, tool_call_id: str, state: str, result: str) -> None:
    """End a delegation whose child never ran to a terminal (its parent's call is gone)."""
    row = of_call(tx.session, tool_call_id)
    if row is not None and row.state == RUNNING:
        row.state, row.result, row.finished_at = state, result, datetime.now(UTC)
