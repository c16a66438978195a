"""One-time pairing codes, with which a browser signs in without copying a token.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04

* `pairing_codes`: the SHA-256 of each code (never the code), its principal, when it expires,
  when it was used and the client credential it became.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pairing_codes",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("principal", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("credential_id", sa.String(40), nullable=True),
        sa.Column("created_by", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pairing_codes")),
        sa.UniqueConstraint("code_hash", name=op.f("uq_pairing_codes_code_hash")),
    )
    op.create_index(op.f("ix_pairing_codes_expires_at"), "pairing_codes", ["expires_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_pairing_codes_expires_at"), table_name="pairing_codes")
    op.drop_table("pairing_codes")
