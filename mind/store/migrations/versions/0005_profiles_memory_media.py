"""Profiles, memory and images: what a conversation runs with, remembers and is shown.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03

* `conversations.profile`: the profile a conversation runs with ("" = the default profile).
* `memory_entries`: a conversation's memory, one row per key (the quotas are the Mind's).
* `media`: image bytes stored once under their SHA-256; messages refer to them by digest.

This revision is frozen: it spells the tables out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column(
        "conversations",
        sa.Column("profile", sa.String(64), nullable=False, server_default=""),
    )
    op.create_table(
        "memory_entries",
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_key"],
            ["conversations.key"],
            name=op.f("fk_memory_entries_conversation_key_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_key", "key", name=op.f("pk_memory_entries")),
    )
    op.create_table(
        "media",
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("media_type", sa.String(64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("digest", name=op.f("pk_media")),
    )


def downgrade() -> None:
    op.drop_table("media")
    op.drop_table("memory_entries")
    op.drop_column("conversations", "profile")
