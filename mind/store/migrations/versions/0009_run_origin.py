"""Runs and approval requests keep their origin: what started the run, for the person deciding.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03

* `runs.origin`: set when the run starts, from its input's source (an observation's trust and
  source names, never its content: "a medium-trust observation from email@work (INBOX)"),
  and kept by the runs that continue it; "" for a person's message.
* `approvals.origin`: the origin of the run that made the call, shown with the request.

Rows from before this revision have an empty origin. Plain ADD/DROP COLUMN on both backends,
so the tables (and the approvals' decided-once trigger) stay.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("runs", "approvals")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column("origin", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    for table in TABLES:
        op.drop_column(table, "origin")
