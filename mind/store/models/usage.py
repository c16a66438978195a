"""The usage ledger: one row per model request the Mind made, with the tokens it reported.

Rows carry counts and names, never content, so sealed runs are recorded like any other. They
hold no foreign key: a deleted conversation's rows stay under its key (the costs were
incurred), and a row may name no conversation at all.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, BigId, UTCDateTime, utcnow


class UsageRecord(Base):
    __tablename__ = "usage_records"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    # "" when the request served no conversation.
    conversation_key: Mapped[str] = mapped_column(String(64), default="", index=True)
    run_id: Mapped[str] = mapped_column(String(40), default="")
    # The conversation's owner, for scoping; "" without a conversation.
    principal: Mapped[str] = mapped_column(String(128), default="")
    # The provider kind (`openai`, `anthropic`, `gemini`, `scripted`) and the model id.
    provider: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(String(128))
    # What the request was for (`mind.usage.attribution`): turn, compaction, extract, ...
    purpose: Mapped[str] = mapped_column(String(32))
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cached_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    reasoning_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
