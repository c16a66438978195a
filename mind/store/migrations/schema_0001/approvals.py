"""Revision 0001: approvals, conversation grants and the approval audit."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import BigId, Timestamp, conversation_fk


def create_approval_tables() -> None:
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("tool_call_id", sa.String(128), nullable=False),
        sa.Column("tool", sa.String(128), nullable=False),
        sa.Column("effect", sa.String(32), nullable=False),
        sa.Column("hand_id", sa.String(128), nullable=False),
        sa.Column("arguments_summary", sa.Text(), nullable=False),
        sa.Column("arguments_digest", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("requested_at", Timestamp, nullable=False),
        sa.Column("expires_at", Timestamp, nullable=False),
        sa.Column("decision", sa.String(32), nullable=True),
        sa.Column("decided_by", sa.String(128), nullable=True),
        sa.Column("decision_reason", sa.Text(), nullable=False),
        sa.Column("decided_at", Timestamp, nullable=True),
        sa.CheckConstraint(
            "decision IS NULL OR decision IN "
            "('approve_once', 'approve_conversation', 'deny', 'expired')",
            name=op.f("ck_approvals_decision"),
        ),
        sa.CheckConstraint(
            "effect IN ('read_only', 'workspace_write', 'external_side_effect', 'unknown')",
            name=op.f("ck_approvals_effect"),
        ),
        conversation_fk("approvals"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approvals")),
        sa.UniqueConstraint("tool_call_id", name=op.f("uq_approvals_tool_call_id")),
    )
    op.create_index(op.f("ix_approvals_conversation_key"), "approvals", ["conversation_key"])

    op.create_table(
        "approval_grants",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("tool", sa.String(128), nullable=False),
        sa.Column("hand_id", sa.String(128), nullable=False),
        sa.Column("approval_id", sa.String(40), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        conversation_fk("approval_grants"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approval_grants")),
        sa.UniqueConstraint(
            "conversation_key",
            "tool",
            "hand_id",
            name=op.f("uq_approval_grants_conversation_key_tool_hand_id"),
        ),
    )

    op.create_table(
        "approval_audit",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("approval_id", sa.String(40), nullable=True),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("tool_call_id", sa.String(128), nullable=False),
        sa.Column("tool", sa.String(128), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=False),
        sa.Column("principal", sa.String(128), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approval_audit")),
    )
    op.create_index(op.f("ix_approval_audit_approval_id"), "approval_audit", ["approval_id"])
    op.create_index(
        op.f("ix_approval_audit_conversation_key"), "approval_audit", ["conversation_key"]
    )
