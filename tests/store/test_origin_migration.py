"""Migration 0009 adds the origin of runs and approval requests without losing older rows."""

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


def _columns(url: str, table: str) -> set[str]:
    engine = create_migration_engine(url)
    try:
        with engine.connect() as connection:
            return {c["name"] for c in inspect(connection).get_columns(table)}
    finally:
        engine.dispose()


def test_runs_and_requests_made_before_the_origin_keep_an_empty_one_across_the_migration(
    empty_store_url: str,
) -> None:
    url = empty_store_url
    migrate.upgrade(url, "0008")
    _execute(
        url,
        "INSERT INTO conversations (key, owner, title, created_at, active_hand, profile, "
        "context_generation) VALUES ('p_old', 'alice', '', :now, '', '', 0)",
        now=NOW,
    )
    _execute(
        url,
        "INSERT INTO runs (id, conversation_key, state, trigger, detail_mode, permissions, "
        "reason, steps, usage, started_at) VALUES ('run_1', 'p_old', 'completed', "
        "'observation:low', 'summary', '{}', '', 1, '{}', :now)",
        now=NOW,
    )
    _execute(
        url,
        "INSERT INTO approvals (id, conversation_key, run_id, tool_call_id, tool, effect, "
        "hand_id, arguments_summary, arguments_digest, reason, requested_at, expires_at, "
        "decision_reason, decision_text) VALUES ('ap_old', 'p_old', 'run_1', 'call_1', "
        "'awareness_interact', 'external_side_effect', '', 'action=<5 chars>', 'd', 'r', "
        ":now, :now, '', '')",
        now=NOW,
    )

    migrate.upgrade(url)
    assert _execute(url, "SELECT id, origin FROM runs") == [("run_1", "")]
    assert _execute(url, "SELECT id, origin FROM approvals") == [("ap_old", "")]

    migrate.downgrade(url, "0008")
    assert "origin" not in _columns(url, "runs") | _columns(url, "approvals")
    assert _execute(url, "SELECT id FROM approvals") == [("ap_old",)]
