"""Firings are run again after a crash: each counts the runs it started.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06

* `firings.attempts`: how many proactive runs the firing started (at most
  `mind.agent.proactive.MAX_ATTEMPTS`). A firing already handed to a run counts one.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "firings", sa.Column("attempts", sa.Integer(), nullable=False, server_default="0")
    )
    op.execute("UPDATE firings SET attempts = 1 WHERE run_id <> ''")


def downgrade() -> None:
    op.drop_column("firings", "attempts")
