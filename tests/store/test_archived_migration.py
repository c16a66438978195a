"""Migration 0017: conversations gain `archived`, false for every existing one."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import inspect, text

from mind.store import migrate
from mind.store.engine import create_migration_engine

NOW = datetime(2026, 12, 8, tzinfo=UTC)


def test_existing_conversations_are_not_archived_and_downgrading_drops_the_column(
    empty_store_url: str,
) -> None:
    url = empty_store_url
    migrate.upgrade(url, "0016")
    engine = create_migration_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO conversations (key, owner, title, created_at, active_hand, "
                    "profile, context_generation, kind) "
                    "VALUES ('p_old', 'alice', '', :now, '', '', 0, 'chat')"
                ),
                {"now": NOW},
            )
        migrate.upgrade(url, "0017")
        with engine.connect() as connection:
            archived = connection.execute(text("SELECT archived FROM conversations")).scalar_one()
        assert archived is False or archived == 0
        migrate.downgrade(url, "0016")
        with engine.connect() as connection:
            columns = {c["name"] for c in inspect(connection).get_columns("conversations")}
        assert "archived" not in columns
    finally:
        engine.dispose()
