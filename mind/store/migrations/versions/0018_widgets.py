"""Widget types and widgets.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-09

* `widget_types`: one row per version of an operator's widget type (its schema document of
  modules and its HTML page); the newest version is the current one.
* `widgets`: a conversation's widgets (type and the version made with, title, summary, cover,
  a revision counting every change, the idempotency key of the call that made it).
* `widget_records`: a widget's records per module, each with its own revision.

This revision is frozen: it spells the columns out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "widget_types",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("modules", sa.JSON(), nullable=False),
        sa.Column("page", sa.Text(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("name", "version", name=op.f("pk_widget_types")),
    )
    op.create_table(
        "widgets",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("type_name", sa.String(64), nullable=False),
        sa.Column("type_version", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("cover", sa.String(64), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_key"],
            ["conversations.key"],
            name=op.f("fk_widgets_conversation_key_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_widgets")),
        sa.UniqueConstraint(
            "conversation_key",
            "idempotency_key",
            name=op.f("uq_widgets_conversation_key_idempotency_key"),
        ),
    )
    op.create_index("ix_widgets_conversation_key", "widgets", ["conversation_key"])
    op.create_index("ix_widgets_type_name", "widgets", ["type_name"])
    op.create_table(
        "widget_records",
        sa.Column("widget_id", sa.String(40), nullable=False),
        sa.Column("module", sa.String(64), nullable=False),
        sa.Column("record_id", sa.String(64), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.ForeignKeyConstraint(
            ["widget_id"],
            ["widgets.id"],
            name=op.f("fk_widget_records_widget_id_widgets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("widget_id", "module", "record_id", name=op.f("pk_widget_records")),
    )


def downgrade() -> None:
    op.drop_table("widget_records")
    op.drop_table("widgets")
    op.drop_table("widget_types")
