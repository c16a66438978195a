"""Migration 0010: older conversations get a kind from their keys; provider secrets appear."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import inspect, text

from mind.store import migrate
from mind.store.engine import create_migration_engine

NOW = datetime(2026, 12, 1, tzinfo=UTC)
KEYS = ("p_awareness", "p_aw-email-0123456789ab", "p_awkward", "p_mine", "g_team")


def test_awareness_conversations_made_before_the_kind_are_marked_and_the_rest_are_chats(
    empty_store_url: str,
) -> None:
    url = empty_store_url
    migrate.upgrade(url, "0009")
    engine = create_migration_engine(url)
    try:
        with engine.begin() as connection:
            for key in KEYS:
                connection.execute(
                    text(
                        "INSERT INTO conversations (key, owner, title, created_at, active_hand, "
                        "profile, context_generation) VALUES (:key, 'alice', '', :now, '', '', 0)"
                    ),
                    {"key": key, "now": NOW},
                )
        migrate.upgrade(url, "0010")
        with engine.connect() as connection:
            kinds = dict(connection.execute(text("SELECT key, kind FROM conversations")).all())
            tables = set(inspect(connection).get_table_names())
        assert kinds == {
            "p_awareness": "awareness",
            "p_aw-email-0123456789ab": "awareness",
            "p_awkward": "chat",
            "p_mine": "chat",
            "g_team": "chat",
        }
        assert "provider_secrets" in tables
        migrate.downgrade(url, "0009")
        with engine.connect() as connection:
            columns = {c["name"] for c in inspect(connection).get_columns("conversations")}
            assert "kind" not in columns
            assert "provider_secrets" not in set(inspect(connection).get_table_names())
    finally:
        engine.dispose()
