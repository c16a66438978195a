"""The building blocks the first revision's tables share, spelled out (never the models')."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# INTEGER PRIMARY KEY is SQLite's auto-increment rowid; BIGINT (bigserial) on PostgreSQL.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Timestamp = sa.DateTime(timezone=True)

TASK_STATES = (
    "('offered', 'accepted', 'succeeded', 'failed', 'rejected', 'cancelled', 'timed_out', 'lost')"
)


def conversation_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["conversation_key"],
        ["conversations.key"],
        name=op.f(f"fk_{table}_conversation_key_conversations"),
        ondelete="CASCADE",
    )
