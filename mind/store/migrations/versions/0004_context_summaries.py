"""Compaction: a conversation's context generation, and restores that skip summarised history.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03

* `conversations.context_generation`: the generation of the conversation's latest context
  summary (0: none). A compaction commits its summary only if the generation it started from
  is still current (compare-and-set), so a concurrent change makes it retry, never overwrite.
* `ix_messages_conversation_key_id` on `messages (conversation_key, id)`: a conversation with a
  summary is restored from the messages after it, at a cost independent of the history before.
  It supersedes `ix_messages_conversation_key`.

This revision is frozen: it spells the tables out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "conversations",
        sa.Column("context_generation", sa.Integer(), nullable=False, server_default="0"),
    )
    op.create_index(op.f("ix_messages_conversation_key_id"), "messages", ["conversation_key", "id"])
    op.drop_index(op.f("ix_messages_conversation_key"), table_name="messages")


def downgrade() -> None:
    op.create_index(op.f("ix_messages_conversation_key"), "messages", ["conversation_key"])
    op.drop_index(op.f("ix_messages_conversation_key_id"), table_name="messages")
    op.drop_column("conversations", "context_generation")
