"""The recall index: the text a person may see of each message, summary and memory entry,
written by the indexer (`mind.recall.indexer`) off the turn's path and searched by
`mind.recall.search`.

`terms` holds the text's words, lower-cased and separated by single spaces (`mind.recall.
terms`), so that both backends split it into the same tokens: SQLite indexes it in the FTS5
table `recall_fts` (external content, kept in step by triggers), PostgreSQL through a GIN index
on `to_tsvector('simple', terms)`. Neither lives in these models (see `BACKEND_OBJECTS`); the
migration creates them. Rows go with their conversation (`ON DELETE CASCADE`).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, BigId, UTCDateTime, utcnow

RECALL_SOURCES = ("message", "summary", "memory")
# Objects of the index only one backend has, created by the migration outside the models: the
# FTS5 table with its shadow tables (SQLite), the expression index (PostgreSQL).
BACKEND_OBJECTS = frozenset(
    {
        "recall_fts",
        "recall_fts_data",
        "recall_fts_idx",
        "recall_fts_docsize",
        "recall_fts_config",
        "ix_recall_entries_terms",
    }
)


class RecallEntry(Base):
    __tablename__ = "recall_entries"
    __table_args__ = (UniqueConstraint("conversation_key", "source", "ref"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    # "message", "summary" or "memory", and which one: the message's or summary's id, the
    # memory entry's key.
    source: Mapped[str] = mapped_column(String(16))
    ref: Mapped[str] = mapped_column(String(64))
    # The message to open: the message itself, or the last one a summary covers; 0 for memory.
    message_id: Mapped[int] = mapped_column(BigInteger, default=0)
    run_id: Mapped[str] = mapped_column(String(40), default="")
    # user, assistant, tool, summary or memory.
    role: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    terms: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # The text's embedding (little-endian float32) and the model that made it, when semantic
    # recall is configured; NULL until the indexer computed it.
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    embedding_model: Mapped[str] = mapped_column(String(128), default="")
