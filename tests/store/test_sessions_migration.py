"""Migration 0020: the never-written `sessions` and `session_groups` go with the `session_id`
columns of `messages` and `summaries`; every message and summary stays, and messages stay
append-only (SQLite copies the table, and its trigger comes back)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import DBAPIError

from mind.store import migrate
from mind.store.engine import create_migration_engine

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def _columns(connection: object, table: str) -> set[str]:
    return {c["name"] for c in inspect(connection).get_columns(table)}


def test_the_session_tables_go_and_messages_and_summaries_stay_append_only(
    empty_store_url: str,
) -> None:
    url = empty_store_url
    migrate.upgrade(url, "0019")
    engine = create_migration_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO conversations (key, owner, title, created_at, active_hand, "
                    "profile, context_generation, kind, archived) "
                    "VALUES ('p_old', 'alice', '', :now, '', '', 1, 'chat', false)"
                ),
                {"now": NOW},
            )
            for number in (1, 2):
                connection.execute(
                    text(
                        "INSERT INTO messages (conversation_key, role, text, payload, "
                        "created_at) VALUES ('p_old', 'user', :text, '{}', :now)"
                    ),
                    {"text": f"m{number}", "now": NOW},
                )
            connection.execute(
                text(
                    "INSERT INTO summaries (conversation_key, through_message_id, generation, "
                    "version, text, environment, created_at) "
                    "VALUES ('p_old', 1, 1, 1, 'said m1', '', :now)"
                ),
                {"now": NOW},
            )

        migrate.upgrade(url, "0020")

        with engine.connect() as connection:
            tables = set(inspect(connection).get_table_names())
            assert not {"sessions", "session_groups"} & tables
            assert "session_id" not in _columns(connection, "messages")
            assert "session_id" not in _columns(connection, "summaries")
            texts = connection.execute(text("SELECT text FROM messages ORDER BY id")).scalars()
            assert list(texts) == ["m1", "m2"]
            assert connection.execute(text("SELECT text FROM summaries")).scalar_one() == "said m1"
        with pytest.raises(DBAPIError, match="append-only"), engine.begin() as connection:
            connection.execute(text("UPDATE messages SET text = 'changed'"))

        migrate.downgrade(url, "0019")
        with engine.connect() as connection:
            assert {"sessions", "session_groups"} <= set(inspect(connection).get_table_names())
            assert "session_id" in _columns(connection, "messages")
            assert connection.execute(text("SELECT count(*) FROM messages")).scalar_one() == 2
        with pytest.raises(DBAPIError, match="append-only"), engine.begin() as connection:
            connection.execute(text("UPDATE messages SET text = 'changed'"))
    finally:
        engine.dispose()
