"""Several Minds on one database: the Minds, and the conversation leases.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07

`mind_nodes` lists the Minds that share the database (where the others reach each one);
`conversation_leases` names the Mind that owns each conversation until when, with the epoch
that fences its writes (`mind.cluster`). Both stay empty on SQLite, where one Mind owns the
data directory.

This revision is frozen: it spells the tables out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import Timestamp

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mind_nodes",
        sa.Column("node_id", sa.String(64), nullable=False),
        sa.Column("address", sa.String(255), nullable=False),
        sa.Column("started_at", Timestamp, nullable=False),
        sa.Column("seen_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_mind_nodes")),
    )
    op.create_table(
        "conversation_leases",
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("node_id", sa.String(64), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("conversation_key", name=op.f("pk_conversation_leases")),
    )
    op.create_index(op.f("ix_conversation_leases_node_id"), "conversation_leases", ["node_id"])
    op.create_index(
        op.f("ix_conversation_leases_expires_at"), "conversation_leases", ["expires_at"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_conversation_leases_expires_at"), table_name="conversation_leases")
    op.drop_index(op.f("ix_conversation_leases_node_id"), table_name="conversation_leases")
    op.drop_table("conversation_leases")
    op.drop_table("mind_nodes")
