"""Initiative: actions waiting for confirmation, scheduled actions and their firings.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03

* `pending_actions`: what the decision layer planned and the owner must confirm, cancel or
  amend before it runs; each expires.
* `scheduled_actions`: durable scheduled actions with their trigger (UTC next due time for
  times, intervals and cron expressions; conditions over observations or memory).
* `firings`: each firing, claimed in the unit that moves its action's next due time; unique per
  action and occasion, so a replayed claim inserts nothing.

This revision is frozen: it spells the tables out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _conversation(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["conversation_key"],
        ["conversations.key"],
        name=op.f(f"fk_{table}_conversation_key_conversations"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "pending_actions",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("timing", sa.String(16), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=False),
        sa.Column("trigger", sa.JSON(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("expires_at", Timestamp, nullable=False),
        sa.Column("decided_at", Timestamp, nullable=True),
        sa.Column("outcome", sa.String(64), nullable=False),
        sa.CheckConstraint(
            _in("state", ("pending", "confirmed", "cancelled", "amended", "expired")),
            name=op.f("ck_pending_actions_state"),
        ),
        sa.CheckConstraint(
            _in("timing", ("immediate", "planned")), name=op.f("ck_pending_actions_timing")
        ),
        _conversation("pending_actions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pending_actions")),
    )
    op.create_index(
        "ix_pending_actions_conversation_key_state",
        "pending_actions",
        ["conversation_key", "state"],
    )
    op.create_index(
        "ix_pending_actions_state_expires_at", "pending_actions", ["state", "expires_at"]
    )
    op.create_table(
        "scheduled_actions",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=False),
        sa.Column("trigger", sa.JSON(), nullable=False),
        sa.Column("trigger_kind", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("next_fire_at", Timestamp, nullable=True),
        sa.Column("catch_up", sa.Boolean(), nullable=False),
        sa.Column("firing_count", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.CheckConstraint(
            _in("state", ("active", "paused", "finished", "deleted")),
            name=op.f("ck_scheduled_actions_state"),
        ),
        _conversation("scheduled_actions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduled_actions")),
    )
    op.create_index(
        op.f("ix_scheduled_actions_conversation_key"), "scheduled_actions", ["conversation_key"]
    )
    op.create_index(
        "ix_scheduled_actions_state_next_fire_at", "scheduled_actions", ["state", "next_fire_at"]
    )
    op.create_table(
        "firings",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("schedule_id", sa.String(40), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("occasion", sa.String(128), nullable=False),
        sa.Column("due_at", Timestamp, nullable=False),
        sa.Column("claimed_at", Timestamp, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("ended_at", Timestamp, nullable=True),
        sa.CheckConstraint(
            _in("outcome", ("running", "sent", "skipped", "failed", "aborted")),
            name=op.f("ck_firings_outcome"),
        ),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["scheduled_actions.id"],
            name=op.f("fk_firings_schedule_id_scheduled_actions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_firings")),
        sa.UniqueConstraint(
            "schedule_id", "occasion", name=op.f("uq_firings_schedule_id_occasion")
        ),
    )
    op.create_index(op.f("ix_firings_schedule_id"), "firings", ["schedule_id"])


def downgrade() -> None:
    op.drop_table("firings")
    op.drop_table("scheduled_actions")
    op.drop_table("pending_actions")
