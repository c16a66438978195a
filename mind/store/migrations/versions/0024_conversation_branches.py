"""Conversations remember where they were branched from.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-08

* `conversations.branched_from_key`, `conversations.branched_from_message_id`: a branch is a
  conversation of its own holding a copy of another's history up to a message
  (`mind.conversation.branches`); these name that conversation and message so clients can show
  where it came from. Existing conversations are no branches ("" and 0).

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "conversations",
        sa.Column("branched_from_key", sa.String(64), nullable=False, server_default=""),
    )
    op.add_column(
        "conversations",
        sa.Column("branched_from_message_id", sa.BigInteger(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_column("conversations", "branched_from_message_id")
    op.drop_column("conversations", "branched_from_key")
