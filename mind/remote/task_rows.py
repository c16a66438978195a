"""How the Registry reads and writes remote tasks: its prepared statements, and a task row as
a `TaskRecord` (a sealed task's values opened while its key exists)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Update, bindparam, or_, select, update

from mind.remote.model import TaskRecord, TaskState
from mind.sealing.forms import open_json, open_text
from mind.sealing.keyring import KeyRing
from mind.store.models import RemoteRun, Task, TaskTransition
from mind.tools.base import ApprovalBinding, ApprovalSource, DetailMode

# The states a task can still leave.
OPEN = (TaskState.OFFERED, TaskState.ACCEPTED)

# A task with the fields of its run: every read of the registry selects these columns.
TASKS = select(
    *Task.__table__.columns,
    RemoteRun.conversation_key,
    RemoteRun.run_id,
    RemoteRun.detail_mode,
    RemoteRun.background,
).join(RemoteRun, Task.remote_run_id == RemoteRun.id)
BY_ID = TASKS.where(Task.id == bindparam("task_id"))
BY_CALL = TASKS.where(Task.tool_call_id == bindparam("tool_call_id"))
# Spelled out rather than IN: a prepared statement takes no list parameter.
OPEN_TASKS = TASKS.where(or_(*(Task.state == s.value for s in OPEN))).order_by(Task.created_at)
TRANSITIONS = (
    select(TaskTransition.__table__)
    .where(TaskTransition.task_id == bindparam("task_id"))
    .order_by(TaskTransition.id)
)
_MOVE = update(Task).where(
    Task.id == bindparam("task_id"),
    Task.state == bindparam("from_state"),
    Task.attempt == bindparam("from_attempt"),
)
REQUEST_CANCEL = (
    update(Task)
    .where(Task.id == bindparam("task_id"), Task.cancel_requested_at.is_(None))
    .values(
        cancel_requested_at=bindparam("now"),
        cancel_reason=bindparam("reason"),
        updated_at=bindparam("now"),
    )
)


def task_record(row: Any, ring: KeyRing) -> TaskRecord:
    """A row of `TASKS` as a record (a sealed task's values opened while its key exists)."""
    arguments = open_json(row.arguments, ring, None)
    return TaskRecord(
        id=row.id,
        remote_run_id=row.remote_run_id,
        conversation_key=row.conversation_key,
        run_id=row.run_id,
        tool_call_id=row.tool_call_id,
        hand_name=row.hand_name,
        tool=row.tool,
        attempt=row.attempt,
        state=TaskState(row.state),
        arguments=dict(arguments or {}),
        approval=_binding(row),
        detail_mode=DetailMode(row.detail_mode),
        background=row.background,
        cancel_requested_at=row.cancel_requested_at,
        cancel_reason=row.cancel_reason,
        output=open_text(row.output, ring),
        error=open_text(row.error, ring),
        created_at=row.created_at,
        updated_at=row.updated_at,
        arguments_removed=arguments is None,
        images=tuple(row.images or ()),
    )


def _binding(row: Any) -> ApprovalBinding | None:
    """The task's stored binding; none when no digest was bound (a read-only call)."""
    if not row.arguments_digest:
        return None
    return ApprovalBinding(
        ApprovalSource(row.approval_source),
        row.arguments_digest,
        row.approval_id,
        row.approval_detail,
    )


def binding_columns(binding: ApprovalBinding | None) -> dict[str, str]:
    if binding is None:
        return {
            "arguments_digest": "",
            "approval_source": "",
            "approval_id": "",
            "approval_detail": "",
        }
    return {
        "arguments_digest": binding.arguments_digest,
        "approval_source": binding.source.value,
        "approval_id": binding.approval_id,
        "approval_detail": binding.detail,
    }


_MOVES: dict[tuple[str, ...], Update] = {}


def move_statement(keys: tuple[str, ...]) -> Update:
    """The compare-and-set of a transition setting `keys` (one statement per shape)."""
    statement = _MOVES.get(keys)
    if statement is None:
        statement = _MOVES[keys] = _MOVE.values({key: bindparam(key) for key in keys})
    return statement
