"""Images of queued inputs: a message waiting behind a run keeps its images until delivered.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

* `inputs.images`: the references (`[{digest, media_type, size_bytes}]`) of the images sent
  with the input; the bytes are in `media`. Delivery copies them into the message's payload.

This revision is frozen: it spells the tables out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("inputs", sa.Column("images", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    op.drop_column("inputs", "images")
