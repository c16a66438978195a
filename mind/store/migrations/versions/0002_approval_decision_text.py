"""Approvals keep the decision text: what the person deciding reads, in every detail mode.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-09

Requests made before this revision have an empty text; clients then show the argument summary.
A plain ADD/DROP COLUMN on both backends, so the table (and its decided-once trigger) stays.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "approvals", sa.Column("decision_text", sa.Text(), nullable=False, server_default="")
    )


def downgrade() -> None:
    op.drop_column("approvals", "decision_text")
