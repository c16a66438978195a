"""The usage ledger: one row per model request.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07

* `usage_records`: when, for which conversation, run and owner, on which provider and model,
  for what purpose (turn, compaction, extract, evaluate, plan, review), and the tokens the
  provider reported (input, output, cached, reasoning). No foreign key: a deleted
  conversation's rows stay under its key.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "usage_records",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("principal", sa.String(128), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("purpose", sa.String(32), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=False),
        sa.Column("reasoning_tokens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_usage_records"),
    )
    op.create_index("ix_usage_records_recorded_at", "usage_records", ["recorded_at"])
    op.create_index("ix_usage_records_conversation_key", "usage_records", ["conversation_key"])


def downgrade() -> None:
    op.drop_table("usage_records")
