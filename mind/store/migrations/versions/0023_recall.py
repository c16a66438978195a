"""The recall index over what a person may see of their conversations.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-10

`recall_entries` holds one row per indexed message, summary or memory entry with its words in
`terms`; the index over them is the backend's own full-text index: an FTS5 table with
external content on SQLite (`unicode61`, diacritics kept, no stemming), kept in step with the
rows by triggers, and a GIN index on `to_tsvector('simple', terms)` on PostgreSQL (the same
tokens: `terms` is already split into words). The `recall` cursor is left unset: the indexer
fills the index from the tables the first time it runs (`mind.recall.indexer`).

This revision is frozen: it spells the table out instead of importing the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mind.store.migrations.schema_0001.columns import BigId, Timestamp, conversation_fk

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_INDEX = (
    "CREATE VIRTUAL TABLE recall_fts USING fts5(terms, content='recall_entries', "
    "content_rowid='id', tokenize=\"unicode61 remove_diacritics 0\")",
    "CREATE TRIGGER recall_entries_ai AFTER INSERT ON recall_entries BEGIN "
    "INSERT INTO recall_fts(rowid, terms) VALUES (new.id, new.terms); END",
    "CREATE TRIGGER recall_entries_ad AFTER DELETE ON recall_entries BEGIN "
    "INSERT INTO recall_fts(recall_fts, rowid, terms) VALUES ('delete', old.id, old.terms); END",
    "CREATE TRIGGER recall_entries_au AFTER UPDATE OF terms ON recall_entries BEGIN "
    "INSERT INTO recall_fts(recall_fts, rowid, terms) VALUES ('delete', old.id, old.terms); "
    "INSERT INTO recall_fts(rowid, terms) VALUES (new.id, new.terms); END",
)
_POSTGRESQL_INDEX = (
    "CREATE INDEX ix_recall_entries_terms ON recall_entries "
    "USING gin (to_tsvector('simple'::regconfig, terms))",
)


def upgrade() -> None:
    op.create_table(
        "recall_entries",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("conversation_key", sa.String(64), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(64), nullable=False),
        sa.Column("message_id", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("terms", sa.Text(), nullable=False),
        sa.Column("created_at", Timestamp, nullable=False),
        sa.Column("embedding", sa.LargeBinary(), nullable=True),
        sa.Column("embedding_model", sa.String(128), nullable=False),
        conversation_fk("recall_entries"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recall_entries")),
        sa.UniqueConstraint(
            "conversation_key",
            "source",
            "ref",
            name=op.f("uq_recall_entries_conversation_key_source_ref"),
        ),
    )
    op.create_index(
        op.f("ix_recall_entries_conversation_key"), "recall_entries", ["conversation_key"]
    )
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _SQLITE_INDEX if sqlite else _POSTGRESQL_INDEX:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("recall_entries_ai", "recall_entries_ad", "recall_entries_au"):
            op.execute(f"DROP TRIGGER {trigger}")
        op.execute("DROP TABLE recall_fts")
    else:
        op.execute("DROP INDEX ix_recall_entries_terms")
    op.drop_index(op.f("ix_recall_entries_conversation_key"), table_name="recall_entries")
    op.drop_table("recall_entries")
