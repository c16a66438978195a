"""Approval digests follow RFC 8785, and a task keeps its whole approval binding.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-16

Columns: `tasks.approval_source`, `approval_id` and `approval_detail` say what allowed the
task's call, so that a re-offer (after a reconnect or a restart) carries the same binding.

Data: digests were the SHA-256 of Python's `json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`; they are now the SHA-256 of RFC 8785 canonical JSON. Recomputed are the
digests that will still be compared with a call:

* pending approvals (no decision yet), from the arguments of their tool call in the history;
* open tasks (offered, accepted), from the task's arguments; a Hand checks them at a re-offer.

Decided approvals keep theirs: a decision is never rewritten (the `approvals_decided_once`
trigger), and the call of one decided while the Mind was stopped across this upgrade is
refused as covering other arguments (fail closed) rather than run unchecked. Terminal tasks
are never offered again. A value RFC 8785 cannot write keeps the old digest, so a Hand refuses
the offer. Every task with a digest got it from a person's approval or a conversation grant
(the only bindings before this revision): the source is `person` when its call has an
approval request, else `grant` (with the granting approval from the audit, when recorded).

This revision is frozen: it spells the tables out instead of importing the models.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import rfc8785
import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Digest = Callable[[Any], str | None]

_tasks = sa.table(
    "tasks",
    sa.column("id", sa.String),
    sa.column("tool_call_id", sa.String),
    sa.column("state", sa.String),
    sa.column("arguments", sa.JSON),
    sa.column("arguments_digest", sa.String),
    sa.column("approval_source", sa.String),
    sa.column("approval_id", sa.String),
    sa.column("approval_detail", sa.String),
)
_approvals = sa.table(
    "approvals",
    sa.column("id", sa.String),
    sa.column("conversation_key", sa.String),
    sa.column("tool_call_id", sa.String),
    sa.column("arguments_digest", sa.String),
    sa.column("decision", sa.String),
    sa.column("decided_by", sa.String),
)
_audit = sa.table(
    "approval_audit",
    sa.column("id", sa.Integer),
    sa.column("tool_call_id", sa.String),
    sa.column("source", sa.String),
    sa.column("approval_id", sa.String),
)
_messages = sa.table(
    "messages",
    sa.column("conversation_key", sa.String),
    sa.column("role", sa.String),
    sa.column("payload", sa.JSON),
)
_OPEN = ("offered", "accepted")


def _rfc8785_digest(arguments: Any) -> str | None:
    try:
        return hashlib.sha256(rfc8785.dumps(arguments)).hexdigest()
    except rfc8785.CanonicalizationError:
        return None


def _revision_0002_digest(arguments: Any) -> str | None:
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def upgrade() -> None:
    op.add_column(
        "tasks", sa.Column("approval_source", sa.String(16), nullable=False, server_default="")
    )
    op.add_column(
        "tasks", sa.Column("approval_id", sa.String(40), nullable=False, server_default="")
    )
    op.add_column(
        "tasks", sa.Column("approval_detail", sa.Text(), nullable=False, server_default="")
    )
    connection = op.get_bind()
    _fill_task_sources(connection)
    _redigest(connection, _rfc8785_digest)


def downgrade() -> None:
    _redigest(op.get_bind(), _revision_0002_digest)
    op.drop_column("tasks", "approval_detail")
    op.drop_column("tasks", "approval_id")
    op.drop_column("tasks", "approval_source")


def _fill_task_sources(connection: sa.Connection) -> None:
    tasks = connection.execute(
        sa.select(_tasks.c.id, _tasks.c.tool_call_id).where(_tasks.c.arguments_digest != "")
    ).all()
    if not tasks:
        return
    calls = [task.tool_call_id for task in tasks]
    requested = {
        row.tool_call_id: (row.id, row.decided_by or "")
        for row in connection.execute(
            sa.select(_approvals.c.tool_call_id, _approvals.c.id, _approvals.c.decided_by).where(
                _approvals.c.tool_call_id.in_(calls)
            )
        )
    }
    granted = {
        row.tool_call_id: row.approval_id or ""
        for row in connection.execute(
            sa.select(_audit.c.tool_call_id, _audit.c.approval_id)
            .where(_audit.c.source == "grant", _audit.c.tool_call_id.in_(calls))
            .order_by(_audit.c.id)
        )
    }
    values = []
    for task in tasks:
        if task.tool_call_id in requested:
            approval_id, detail = requested[task.tool_call_id]
            values.append(_source_row(task.id, "person", approval_id, detail))
        else:
            approval_id = granted.get(task.tool_call_id, "")
            values.append(_source_row(task.id, "grant", approval_id, "conversation grant"))
    connection.execute(
        _tasks.update()
        .where(_tasks.c.id == sa.bindparam("task_id"))
        .values(
            approval_source=sa.bindparam("source"),
            approval_id=sa.bindparam("approval"),
            approval_detail=sa.bindparam("detail"),
        ),
        values,
    )


def _source_row(task_id: str, source: str, approval_id: str, detail: str) -> dict[str, str]:
    return {"task_id": task_id, "source": source, "approval": approval_id, "detail": detail}


def _redigest(connection: sa.Connection, digest: Digest) -> None:
    """Recompute the digests of open tasks and pending approvals with `digest`."""
    tasks = connection.execute(
        sa.select(_tasks.c.id, _tasks.c.arguments).where(
            _tasks.c.arguments_digest != "", _tasks.c.state.in_(_OPEN)
        )
    ).all()
    _update(connection, _tasks, [(task.id, digest(task.arguments)) for task in tasks])
    pending = connection.execute(
        sa.select(_approvals.c.id, _approvals.c.conversation_key, _approvals.c.tool_call_id).where(
            _approvals.c.decision.is_(None)
        )
    ).all()
    if not pending:
        return
    arguments = _call_arguments(connection, {row.conversation_key for row in pending})
    _update(
        connection,
        _approvals,
        [
            (row.id, digest(arguments[row.tool_call_id]))
            for row in pending
            if row.tool_call_id in arguments
        ],
    )


def _update(
    connection: sa.Connection, table: sa.TableClause, digests: list[tuple[str, str | None]]
) -> None:
    values = [{"row_id": row_id, "digest": value} for row_id, value in digests if value is not None]
    if values:
        connection.execute(
            table.update()
            .where(table.c.id == sa.bindparam("row_id"))
            .values(arguments_digest=sa.bindparam("digest")),
            values,
        )


def _call_arguments(connection: sa.Connection, conversations: set[str]) -> dict[str, Any]:
    """Tool call id -> its parsed arguments, from the assistant messages of `conversations`."""
    found: dict[str, Any] = {}
    rows = connection.execute(
        sa.select(_messages.c.payload).where(
            _messages.c.role == "assistant", _messages.c.conversation_key.in_(conversations)
        )
    )
    for (payload,) in rows:
        for call in (payload or {}).get("tool_calls", []):
            if call.get("arguments") is not None:
                found[call["id"]] = call["arguments"]
    return found
