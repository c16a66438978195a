"""Sealed turns: the per-run keys that make a sensitive turn's raw values unreadable once it ends.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

* `turn_keys`: one AES-256-GCM key per sealed run; its row is deleted when the run ends having
  called a sensitive tool (crypto-shredding: what was sealed under it can no longer be read).
* `runs.sealed`: for a sealed run, its sensitive tools (tool name → dataset); NULL otherwise.
* `runs.redaction`: for a run whose key was deleted, which datasets were queried and with what
  status (`[{"dataset": …, "status": …}]`); NULL otherwise.

This revision is frozen: it spells the tables out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("sealed", sa.JSON(), nullable=True))
    op.add_column("runs", sa.Column("redaction", sa.JSON(), nullable=True))
    op.create_table(
        "turn_keys",
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("key", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_turn_keys_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_turn_keys")),
    )


def downgrade() -> None:
    op.drop_table("turn_keys")
    op.drop_column("runs", "redaction")
    op.drop_column("runs", "sealed")
