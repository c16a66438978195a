"""Revision 0001: a Hand's remote runs, their tasks and task transitions."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import TASK_STATES, BigId, Timestamp, conversation_fk


def create_remote_tables() -> None:
    op.create_table(
        "remote_runs",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("hand_name", sa.String(128), nullable=False),
        sa.Column("background", sa.Boolean(), nullable=False),
        sa.Column("detail_mode", sa.String(16), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        conversation_fk("remote_runs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_remote_runs")),
    )
    op.create_index(op.f("ix_remote_runs_conversation_key"), "remote_runs", ["conversation_key"])

    op.create_table(
        "tasks",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("remote_run_id", sa.String(40), nullable=False),
        sa.Column("tool_call_id", sa.String(128), nullable=False),
        sa.Column("hand_name", sa.String(128), nullable=False),
        sa.Column("tool", sa.String(128), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("arguments_digest", sa.String(64), nullable=False),
        sa.Column("cancel_requested_at", Timestamp, nullable=True),
        sa.Column("cancel_reason", sa.Text(), nullable=False),
        sa.Column("output", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.CheckConstraint(f"state IN {TASK_STATES}", name=op.f("ck_tasks_state")),
        sa.ForeignKeyConstraint(
            ["remote_run_id"],
            ["remote_runs.id"],
            name=op.f("fk_tasks_remote_run_id_remote_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tasks")),
    )
    op.create_index(op.f("ix_tasks_remote_run_id"), "tasks", ["remote_run_id"])
    op.create_index(op.f("ix_tasks_tool_call_id"), "tasks", ["tool_call_id"])
    op.create_index(op.f("ix_tasks_hand_name"), "tasks", ["hand_name"])

    op.create_table(
        "task_transitions",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("task_id", sa.String(40), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("from_state", sa.String(16), nullable=False),
        sa.Column("to_state", sa.String(16), nullable=False),
        sa.Column("terminal", sa.Boolean(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.CheckConstraint(f"to_state IN {TASK_STATES}", name=op.f("ck_task_transitions_to_state")),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name=op.f("fk_task_transitions_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_transitions")),
    )
    op.create_index(op.f("ix_task_transitions_task_id"), "task_transitions", ["task_id"])
    op.create_index(
        "uq_task_transitions_one_terminal",
        "task_transitions",
        ["task_id"],
        unique=True,
        sqlite_where=sa.text("terminal"),
        postgresql_where=sa.text("terminal"),
    )
