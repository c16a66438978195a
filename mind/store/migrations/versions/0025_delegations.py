"""Child runs started by `delegate` tool calls.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-20

`delegations` holds one row per delegating tool call (keyed by its id, so a replayed call
never starts a second child): the child's own conversation, what it may do (tools, depth,
budget) and, once it ended, its result (`mind.conversation.delegations`).

This revision is frozen: it spells the table out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import Timestamp

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "delegations",
        sa.Column("tool_call_id", sa.String(64), nullable=False),
        sa.Column("parent_key", sa.String(64), nullable=False),
        sa.Column("parent_run_id", sa.String(64), nullable=False),
        sa.Column("child_key", sa.String(64), nullable=False),
        sa.Column("principal", sa.String(128), nullable=False),
        sa.Column("task", sa.Text(), nullable=False),
        sa.Column("tools", sa.JSON(), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("max_turns", sa.Integer(), nullable=False),
        sa.Column("max_tokens", sa.Integer(), nullable=False),
        sa.Column("deadline_at", Timestamp, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("finished_at", Timestamp, nullable=True),
        sa.CheckConstraint(
            "state IN ('running', 'succeeded', 'failed', 'cancelled')",
            name=op.f("ck_delegations_state"),
        ),
        sa.PrimaryKeyConstraint("tool_call_id", name=op.f("pk_delegations")),
        sa.UniqueConstraint("child_key", name=op.f("uq_delegations_child_key")),
    )
    op.create_index(op.f("ix_delegations_parent_key"), "delegations", ["parent_key"])


def downgrade() -> None:
    op.drop_index(op.f("ix_delegations_parent_key"), table_name="delegations")
    op.drop_table("delegations")
