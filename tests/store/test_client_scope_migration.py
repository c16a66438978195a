"""Migration 0015: client credentials made before scopes were checked keep what they could do.

Such a credential could chat whatever it held; the one holding none of chat, approve and post
gets `chat`, one given `approve` or `post` on purpose keeps exactly its scopes, and Hand and
service credentials are left alone."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from mind.store import migrate
from mind.store.engine import create_migration_engine

NOW = datetime(2026, 12, 1, tzinfo=UTC)
CREDENTIALS = sa.table(
    "credentials",
    sa.column("id", sa.String()),
    sa.column("kind", sa.String()),
    sa.column("principal", sa.String()),
    sa.column("scopes", sa.JSON()),
    sa.column("prefix", sa.String()),
    sa.column("secret_hash", sa.String()),
    sa.column("label", sa.String()),
    sa.column("created_at", sa.DateTime(timezone=True)),
)
BEFORE = {
    "none": ("client", []),
    "typo": ("client", ["chta"]),
    "admin": ("client", ["admin"]),
    "approver": ("client", ["approve"]),
    "poster": ("client", ["post"]),
    "local": ("client", ["chat", "approve", "admin"]),
    "hand": ("hand", ["serve:alice"]),
    "face": ("service", ["gateway"]),
}
AFTER = {
    "none": ["chat"],
    "typo": ["chta", "chat"],
    "admin": ["admin", "chat"],
    "approver": ["approve"],
    "poster": ["post"],
    "local": ["chat", "approve", "admin"],
    "hand": ["serve:alice"],
    "face": ["gateway"],
}


def test_only_client_credentials_without_a_chosen_scope_gain_chat(empty_store_url: str) -> None:
    url = empty_store_url
    migrate.upgrade(url, "0014")
    engine = create_migration_engine(url)
    try:
        with engine.begin() as connection:
            for name, (kind, scopes) in BEFORE.items():
                connection.execute(
                    sa.insert(CREDENTIALS).values(
                        id=name,
                        kind=kind,
                        principal=name,
                        scopes=scopes,
                        prefix=f"p{name}",
                        secret_hash="0" * 64,
                        label="",
                        created_at=NOW,
                    )
                )
        migrate.upgrade(url)
        with engine.connect() as connection:
            rows = connection.execute(sa.select(CREDENTIALS.c.id, CREDENTIALS.c.scopes)).all()
    finally:
        engine.dispose()
    assert {row.id: list(row.scopes) for row in rows} == AFTER
