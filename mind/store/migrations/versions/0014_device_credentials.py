"""Paired devices: which browser a client credential signed in, and when it was last seen.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06

* `credentials.device_id`: the stable id a browser sent when it paired; pairing the same
  browser again revokes the credential it had.
* `credentials.last_seen_at`: when the credential last authenticated (at most once a minute).

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("credentials") as batch:
        batch.add_column(sa.Column("device_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("credentials") as batch:
        batch.drop_column("last_seen_at")
        batch.drop_column("device_id")
