"""Conversations say what made them; provider API keys can live sealed in the store.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03

* `conversations.kind`: "chat" for a person's conversation, "awareness" for one the platform
  made to receive observations. Existing rows become "chat", except the ones whose keys the
  Awareness router uses (`p_awareness` and the per-source `p_aw-…`), which become "awareness".
* `provider_secrets`: an LLM provider's API key, sealed, as `tobe setup` stores it.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "conversations",
        sa.Column("kind", sa.String(16), nullable=False, server_default="chat"),
    )
    op.execute(
        "UPDATE conversations SET kind = 'awareness' "
        "WHERE key = 'p_awareness' OR key LIKE 'p\\_aw-%' ESCAPE '\\'"
    )
    op.create_table(
        "provider_secrets",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("provider_secrets")
    op.drop_column("conversations", "kind")
