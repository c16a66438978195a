"""Migration 0019: inputs gain `reply_to` (NULL: quotes nothing) and `forwarded` (empty) for
every existing row, and a quoting input with its record round-trips; downgrading drops both."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import inspect, text

from mind.store import migrate
from mind.store.engine import create_migration_engine

NOW = datetime(2026, 12, 7, tzinfo=UTC)
INPUT = (
    "INSERT INTO inputs (conversation_key, idempotency_key, principal, text, steer, "
    "detail_mode, source, images, state, created_at{extra}) "
    "VALUES ('p_old', :key, 'alice', 'hi', false, 'summary', '{{}}', '[]', 'queued', :now"
    "{values})"
)


def test_existing_inputs_quote_nothing_and_new_ones_keep_their_quote_and_record(
    empty_store_url: str,
) -> None:
    url = empty_store_url
    migrate.upgrade(url, "0018")
    engine = create_migration_engine(url)
    record = [{"speaker": "bob", "text": "look", "images": []}]
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO conversations (key, owner, title, created_at, active_hand, "
                    "profile, context_generation, kind, archived) "
                    "VALUES ('p_old', 'alice', '', :now, '', '', 0, 'chat', false)"
                ),
                {"now": NOW},
            )
            connection.execute(text(INPUT.format(extra="", values="")), {"key": "k1", "now": NOW})
        migrate.upgrade(url, "0019")
        with engine.begin() as connection:
            connection.execute(
                text(INPUT.format(extra=", reply_to, forwarded", values=", 41, :record")),
                {"key": "k2", "now": NOW, "record": json.dumps(record)},
            )
            rows = connection.execute(
                text("SELECT reply_to, forwarded FROM inputs ORDER BY id")
            ).all()
        loaded = [(reply, json.loads(f) if isinstance(f, str) else f) for reply, f in rows]
        assert loaded == [(None, []), (41, record)]
        migrate.downgrade(url, "0018")
        with engine.connect() as connection:
            columns = {c["name"] for c in inspect(connection).get_columns("inputs")}
        assert not {"reply_to", "forwarded"} & columns
    finally:
        engine.dispose()
