"""Revision 0001: conversations, their members, sessions, messages and summaries."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import BigId, Timestamp, conversation_fk


def create_conversation_tables() -> None:
    op.create_table(
        "conversations",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("title", sa.String(256), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("active_hand", sa.String(128), nullable=False),
        sa.CheckConstraint(
            "key LIKE 'p\\_%' ESCAPE '\\' OR key LIKE 'g\\_%' ESCAPE '\\'",
            name=op.f("ck_conversations_key_prefix"),
        ),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_conversations")),
    )
    op.create_index(op.f("ix_conversations_owner"), "conversations", ["owner"])

    op.create_table(
        "conversation_members",
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("principal", sa.String(128), nullable=False),
        conversation_fk("conversation_members"),
        sa.PrimaryKeyConstraint(
            "conversation_key", "principal", name=op.f("pk_conversation_members")
        ),
    )
    op.create_index(
        op.f("ix_conversation_members_principal"), "conversation_members", ["principal"]
    )

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

    op.create_table(
        "messages",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("session_id", BigId, nullable=True),
        sa.Column("run_id", sa.String(40), nullable=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.CheckConstraint(
            "role IN ('user', 'assistant', 'tool', 'note')", name=op.f("ck_messages_role")
        ),
        conversation_fk("messages"),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name=op.f("fk_messages_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
    )
    op.create_index(op.f("ix_messages_conversation_key"), "messages", ["conversation_key"])
    op.create_index(op.f("ix_messages_run_id"), "messages", ["run_id"])

    op.create_table(
        "summaries",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("session_id", BigId, nullable=True),
        sa.Column("through_message_id", sa.BigInteger(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("environment", sa.Text(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        conversation_fk("summaries"),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name=op.f("fk_summaries_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_summaries")),
        sa.UniqueConstraint(
            "conversation_key", "generation", name=op.f("uq_summaries_conversation_key_generation")
        ),
    )
    op.create_index(op.f("ix_summaries_conversation_key"), "summaries", ["conversation_key"])
