"""Revision 0001's triggers: the updates the database itself refuses (messages are append-only,
a tool projection's terminal and an approval's decision are written once)."""

from __future__ import annotations

from alembic import op

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
