"""Images of Hand task results: a tool's screenshot reaches its call's tool message.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04

* `tasks.images`: the references (`[{digest, media_type, size_bytes}]`) of the images the
  task's result carried; the bytes are in `media`, stored with the result.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("tasks", sa.Column("images", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    op.drop_column("tasks", "images")
