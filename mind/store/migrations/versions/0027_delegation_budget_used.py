"""A child run's budget used so far survives a restart.

Revision ID: 0027
Revises: 0025
Create Date: 2026-12-22

* `delegations.turns_used`, `delegations.tokens_used`: the model turns and tokens the child's
  runs have spent, written with each stored model step (`mind.conversation.delegations`), so
  a run continuing the child after a restart gets only what is left of its budget. Existing
  rows start at 0.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "delegations",
        sa.Column("turns_used", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column(
        "delegations",
        sa.Column("tokens_used", sa.BigInteger(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_column("delegations", "tokens_used")
    op.drop_column("delegations", "turns_used")
