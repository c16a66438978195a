"""Conversations can be archived.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-08

* `conversations.archived`: an archived conversation leaves its people's default list and stays
  readable, searchable and writable. Existing conversations are not archived.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "conversations",
        sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_column("conversations", "archived")
