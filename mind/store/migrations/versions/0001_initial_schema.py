"""Initial schema: every table of the store and its database-level invariants.

Revision ID: 0001
Revises:
Create Date: 2026-12-02

Besides tables, constraints and the partial unique indexes (one running run per conversation,
one terminal transition per task), triggers refuse:

* any UPDATE of `messages` (history is append-only);
* an UPDATE of a `tool_projections` row whose status is no longer `running` (terminal once);
* an UPDATE of an `approvals` row that already has a decision (decided once).

Both backends report a refused update as an integrity error (SQLite `RAISE(ABORT)`, PostgreSQL
SQLSTATE 23000), which SQLAlchemy raises as `sqlalchemy.exc.IntegrityError`.

This revision is frozen: it spells every type out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# INTEGER PRIMARY KEY is SQLite's auto-increment rowid; BIGINT (bigserial) on PostgreSQL.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Timestamp = sa.DateTime(timezone=True)

TASK_STATES = (
    "('offered', 'accepted', 'succeeded', 'failed', 'rejected', 'cancelled', 'timed_out', 'lost')"
)

# (trigger name, table, condition on OLD or None for every row, message)
REFUSED_UPDATES = (
    ("messages_refuse_update", "messages", None, "messages are append-only"),
    (
        "tool_projections_terminal_once",
        "tool_projections",
        "OLD.status <> 'running'",
        "a tool projection terminal is written once",
    ),
    (
        "approvals_decided_once",
        "approvals",
        "OLD.decision IS NOT NULL",
        "an approval is decided once",
    ),
)


def upgrade() -> None:
    create_conversation_tables()
    create_run_tables()
    create_approval_tables()
    create_remote_tables()
    create_operational_tables()
    create_refused_update_triggers()


def downgrade() -> None:
    drop_refused_update_triggers()
    for table in (
        "seen_observations",
        "cursors",
        "outbox",
        "management_audit",
        "credentials",
        "task_transitions",
        "tasks",
        "remote_runs",
        "approval_audit",
        "approval_grants",
        "approvals",
        "tool_projections",
        "inputs",
        "runs",
        "summaries",
        "messages",
        "sessions",
        "session_groups",
        "conversation_members",
        "conversations",
    ):
        op.drop_table(table)


def conversation_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["conversation_key"],
        ["conversations.key"],
        name=op.f(f"fk_{table}_conversation_key_conversations"),
        ondelete="CASCADE",
    )


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


def create_refused_update_triggers() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute(
            """
            CREATE FUNCTION tobe_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION USING
                    ERRCODE = 'integrity_constraint_violation',
                    MESSAGE = TG_ARGV[0] || ' (table ' || TG_TABLE_NAME || ')';
            END
            $$
            """
        )
        for name, table, condition, message in REFUSED_UPDATES:
            when = f"WHEN ({condition}) " if condition else ""
            op.execute(
                f"CREATE TRIGGER {name} BEFORE UPDATE ON {table} FOR EACH ROW {when}"
                f"EXECUTE FUNCTION tobe_refuse_update('{message}')"
            )
        return
    for name, table, condition, message in REFUSED_UPDATES:
        when = f"WHEN {condition} " if condition else ""
        op.execute(
            f"CREATE TRIGGER {name} BEFORE UPDATE ON {table} {when}"
            f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
        )


def drop_refused_update_triggers() -> None:
    postgresql = op.get_context().dialect.name == "postgresql"
    for name, table, _condition, _message in REFUSED_UPDATES:
        op.execute(f"DROP TRIGGER {name} ON {table}" if postgresql else f"DROP TRIGGER {name}")
    if postgresql:
        op.execute("DROP FUNCTION tobe_refuse_update()")
