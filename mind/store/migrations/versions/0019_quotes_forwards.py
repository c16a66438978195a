"""Quotes and forwarded chat records on queued inputs.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07

* `inputs.reply_to`: the id of the message a person's message quotes (NULL: none).
* `inputs.forwarded`: the chat record forwarded with it (`[{speaker, text, images}]`, the
  images as references into `media`), empty for most inputs.

A queued input keeps both until it is delivered; delivery copies them into the message's
payload (`reply_to`, the `quote` as it was then, `forwarded`), as it does its images.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("inputs", sa.Column("reply_to", sa.BigInteger(), nullable=True))
    op.add_column("inputs", sa.Column("forwarded", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    op.drop_column("inputs", "forwarded")
    op.drop_column("inputs", "reply_to")
