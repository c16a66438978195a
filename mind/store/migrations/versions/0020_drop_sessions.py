"""The unused sessions go.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07

`session_groups` and `sessions` were made in revision 0001 for contexts a conversation might
be split into; nothing ever wrote them. What they were meant to tell is kept otherwise: a
conversation's context generation (`conversations.context_generation`) counts its
compactions, and each summary names the generation it began and the last message it covers.
So the tables go, with the `session_id` columns of `messages` and `summaries` that pointed
at them (always NULL).

SQLite cannot drop a column that a foreign key names: those two tables are copied without it
(batch mode), and the copy of `messages` gets back its trigger that refuses updates.

This revision is frozen: it spells the tables out (with revision 0001's column helpers)
instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import BigId, Timestamp, conversation_fk

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_REFUSE_MESSAGE_UPDATES = (
    "CREATE TRIGGER messages_refuse_update BEFORE UPDATE ON messages "
    "BEGIN SELECT RAISE(ABORT, 'messages are append-only'); END"
)


def _sqlite() -> bool:
    return op.get_context().dialect.name == "sqlite"


def upgrade() -> None:
    for table in ("messages", "summaries"):
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(op.f(f"fk_{table}_session_id_sessions"), type_="foreignkey")
            batch.drop_column("session_id")
    if _sqlite():
        op.execute(_REFUSE_MESSAGE_UPDATES)
    op.drop_index(op.f("ix_sessions_conversation_key"), table_name="sessions")
    op.drop_table("sessions")
    op.drop_index(op.f("ix_session_groups_conversation_key"), table_name="session_groups")
    op.drop_table("session_groups")


def downgrade() -> None:
    op.create_table(
        "session_groups",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        conversation_fk("session_groups"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session_groups")),
    )
    op.create_index(
        op.f("ix_session_groups_conversation_key"), "session_groups", ["conversation_key"]
    )
    op.create_table(
        "sessions",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("group_id", BigId, nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("started_at", Timestamp, nullable=False),
        sa.Column("ended_at", Timestamp, nullable=True),
        conversation_fk("sessions"),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["session_groups.id"],
            name=op.f("fk_sessions_group_id_session_groups"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
    )
    op.create_index(op.f("ix_sessions_conversation_key"), "sessions", ["conversation_key"])
    for table in ("messages", "summaries"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("session_id", BigId, nullable=True))
            batch.create_foreign_key(
                op.f(f"fk_{table}_session_id_sessions"),
                "sessions",
                ["session_id"],
                ["id"],
                ondelete="CASCADE",
            )
    if _sqlite():
        op.execute(_REFUSE_MESSAGE_UPDATES)
