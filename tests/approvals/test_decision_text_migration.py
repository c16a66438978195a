"""Migration 0002 adds the decision text without losing requests made before it."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import inspect, text

from mind.store import migrate
from mind.store.engine import create_migration_engine

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _execute(url: str, statement: str, **values: object) -> list[tuple[object, ...]]:
    engine = create_migration_engine(url)
    try:
        with engine.begin() as connection:
            result = connection.execute(text(statement), values)
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def _approval_columns(url: str) -> set[str]:
    engine = create_migration_engine(url)
    try:
        with engine.connect() as connection:
            return {c["name"] for c in inspect(connection).get_columns("approvals")}
    finally:
        engine.dispose()


def test_a_request_made_before_the_decision_text_keeps_an_empty_one_across_the_migration(
    empty_store_url: str,
) -> None:
    url = empty_store_url
    migrate.upgrade(url, "0001")
    _execute(
        url,
        "INSERT INTO conversations (key, owner, title, created_at, active_hand) "
        "VALUES ('p_old', 'alice', '', :now, '')",
        now=NOW,
    )
    _execute(
        url,
        "INSERT INTO approvals (id, conversation_key, run_id, tool_call_id, tool, effect, "
        "hand_id, arguments_summary, arguments_digest, reason, requested_at, expires_at, "
        "decision_reason) VALUES ('ap_old', 'p_old', 'run_1', 'call_1', 'laptop__run_command', "
        "'external_side_effect', 'h', 'argv=<list of 2 items>', 'd', 'r', :now, :now, '')",
        now=NOW,
    )

    migrate.upgrade(url)
    assert _execute(url, "SELECT id, decision_text FROM approvals") == [("ap_old", "")]

    migrate.downgrade(url, "0001")
    assert "decision_text" not in _approval_columns(url)
    assert _execute(url, "SELECT id FROM approvals") == [("ap_old",)]
