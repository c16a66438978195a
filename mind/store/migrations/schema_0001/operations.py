"""Revision 0001: credentials, the operators' audit, the outbox, cursors and observations
already routed."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import BigId, Timestamp


def create_operational_tables() -> None:
    op.create_table(
        "credentials",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("principal", sa.String(128), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("prefix", sa.String(32), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("label", sa.String(256), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("expires_at", Timestamp, nullable=True),
        sa.Column("revoked_at", Timestamp, nullable=True),
        sa.CheckConstraint(
            "kind IN ('client', 'hand', 'service')", name=op.f("ck_credentials_kind")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credentials")),
        sa.UniqueConstraint("prefix", name=op.f("uq_credentials_prefix")),
    )
    op.create_index(op.f("ix_credentials_principal"), "credentials", ["principal"])

    op.create_table(
        "management_audit",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("time", Timestamp, nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("target", sa.String(256), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_management_audit")),
    )
    op.create_index(op.f("ix_management_audit_time"), "management_audit", ["time"])
    op.create_index(op.f("ix_management_audit_action"), "management_audit", ["action"])

    op.create_table(
        "outbox",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("audience", sa.JSON(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox")),
        # Ids are resume points: SQLite must never hand out an id again after pruning.
        sqlite_autoincrement=True,
    )
    op.create_index(op.f("ix_outbox_conversation_key"), "outbox", ["conversation_key"])

    op.create_table(
        "cursors",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cursors")),
    )

    op.create_table(
        "seen_observations",
        sa.Column("observation_id", sa.String(64), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("publish_seq", sa.BigInteger(), nullable=False),
        sa.Column("received_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("observation_id", name=op.f("pk_seen_observations")),
    )
