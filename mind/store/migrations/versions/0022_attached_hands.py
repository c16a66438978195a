"""The Hands attached to each of the Minds that share a database.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-08

`attached_hands` names, for each Hand name, the Mind whose HandLink holds it, with the tools
it declared, so the owner of a conversation offers the tools of a Hand attached to another
Mind and sends its tasks through that Mind (`mind.remote.directory`). It stays empty on
SQLite, where one Mind holds every Hand.

This revision is frozen: it spells the table out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import Timestamp

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "attached_hands",
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("node_id", sa.String(64), nullable=False),
        sa.Column("instance_id", sa.String(64), nullable=False),
        sa.Column("hand_id", sa.String(40), nullable=False),
        sa.Column("principal", sa.String(128), nullable=False),
        sa.Column("serves", sa.JSON(), nullable=False),
        sa.Column("tools", sa.JSON(), nullable=False),
        sa.Column("attached_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_attached_hands")),
    )
    op.create_index(op.f("ix_attached_hands_node_id"), "attached_hands", ["node_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_attached_hands_node_id"), table_name="attached_hands")
    op.drop_table("attached_hands")
