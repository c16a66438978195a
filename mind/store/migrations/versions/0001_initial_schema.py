"""Initial schema: every table of the store and its database-level invariants.

Revision ID: 0001
Revises:
Create Date: 2026-12-02

Besides tables, constraints and the partial unique indexes (one running run per conversation,
one terminal transition per task), triggers refuse:

* any UPDATE of `messages` (history is append-only);
* an UPDATE of a `tool_projections` row whose status is no longer `running` (terminal once);
* an UPDATE of an `approvals` row that already has a decision (decided once).

Both backends report a refused update as an integrity error (SQLite `RAISE(ABORT)`, PostgreSQL
SQLSTATE 23000), which SQLAlchemy raises as `sqlalchemy.exc.IntegrityError`.

This revision is frozen: it spells every type out instead of importing the models. Its tables
are built by the modules of `mind.store.migrations.schema_0001`, one per domain.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from mind.store.migrations.schema_0001.approvals import create_approval_tables
from mind.store.migrations.schema_0001.conversations import create_conversation_tables
from mind.store.migrations.schema_0001.operations import create_operational_tables
from mind.store.migrations.schema_0001.remote import create_remote_tables
from mind.store.migrations.schema_0001.runs import create_run_tables
from mind.store.migrations.schema_0001.triggers import (
    create_refused_update_triggers,
    drop_refused_update_triggers,
)

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    create_conversation_tables()
    create_run_tables()
    create_approval_tables()
    create_remote_tables()
    create_operational_tables()
    create_refused_update_triggers()


def downgrade() -> None:
    drop_refused_update_triggers()
    for table in (
        "seen_observations",
        "cursors",
        "outbox",
        "management_audit",
        "credentials",
        "task_transitions",
        "tasks",
        "remote_runs",
        "approval_audit",
        "approval_grants",
        "approvals",
        "tool_projections",
        "inputs",
        "runs",
        "summaries",
        "messages",
        "sessions",
        "session_groups",
        "conversation_members",
        "conversations",
    ):
        op.drop_table(table)
