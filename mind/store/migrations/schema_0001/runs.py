"""Revision 0001: runs, the inputs they take, and their tool projections."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import BigId, Timestamp, conversation_fk


def create_run_tables() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("trigger", sa.String(64), nullable=False),
        sa.Column("detail_mode", sa.String(16), nullable=False),
        sa.Column("permissions", sa.JSON(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("usage", sa.JSON(), nullable=False),
        sa.Column("started_at", Timestamp, nullable=False),
        sa.Column("finished_at", Timestamp, nullable=True),
        sa.CheckConstraint(
            "state IN ('running', 'completed', 'failed', 'cancelled', 'interrupted')",
            name=op.f("ck_runs_state"),
        ),
        sa.CheckConstraint(
            "detail_mode IN ('summary', 'transparent')", name=op.f("ck_runs_detail_mode")
        ),
        conversation_fk("runs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    op.create_index(op.f("ix_runs_conversation_key"), "runs", ["conversation_key"])
    op.create_index(
        "uq_runs_one_running_per_conversation",
        "runs",
        ["conversation_key"],
        unique=True,
        sqlite_where=sa.text("state = 'running'"),
        postgresql_where=sa.text("state = 'running'"),
    )

    op.create_table(
        "inputs",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("idempotency_key", sa.String(128), nullable=False),
        sa.Column("principal", sa.String(128), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("steer", sa.Boolean(), nullable=False),
        sa.Column("detail_mode", sa.String(16), nullable=False),
        sa.Column("source", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("message_id", sa.BigInteger(), nullable=True),
        sa.Column("run_id", sa.String(40), nullable=True),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.CheckConstraint(
            "state IN ('queued', 'delivered', 'dropped')", name=op.f("ck_inputs_state")
        ),
        conversation_fk("inputs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inputs")),
        sa.UniqueConstraint(
            "conversation_key",
            "idempotency_key",
            name=op.f("uq_inputs_conversation_key_idempotency_key"),
        ),
    )
    op.create_index(op.f("ix_inputs_conversation_key"), "inputs", ["conversation_key"])

    op.create_table(
        "tool_projections",
        sa.Column("tool_call_id", sa.String(128), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("tool", sa.String(128), nullable=False),
        sa.Column("hand_id", sa.String(128), nullable=False),
        sa.Column("admitted_mode", sa.String(16), nullable=False),
        sa.Column("arguments_summary", sa.Text(), nullable=False),
        sa.Column("arguments_projection", sa.JSON(), nullable=False),
        sa.Column("projection_version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("result_summary", sa.Text(), nullable=False),
        sa.Column("result_projection", sa.JSON(), nullable=False),
        sa.Column("admitted_at", Timestamp, nullable=False),
        sa.Column("finished_at", Timestamp, nullable=True),
        sa.CheckConstraint(
            "admitted_mode IN ('summary', 'transparent')",
            name=op.f("ck_tool_projections_admitted_mode"),
        ),
        sa.CheckConstraint(
            "status IN ('running', 'succeeded', 'failed', 'denied', 'skipped', 'cancelled')",
            name=op.f("ck_tool_projections_status"),
        ),
        conversation_fk("tool_projections"),
        sa.PrimaryKeyConstraint("tool_call_id", name=op.f("pk_tool_projections")),
    )
    op.create_index(
        op.f("ix_tool_projections_conversation_key"), "tool_projections", ["conversation_key"]
    )
    op.create_index(op.f("ix_tool_projections_run_id"), "tool_projections", ["run_id"])
