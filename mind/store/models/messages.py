"""What is said in a conversation: its append-only messages, the inputs waiting to become
messages, and the image bytes both refer to."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, BigId, UTCDateTime, one_of, utcnow

MESSAGE_ROLES = ("user", "assistant", "tool", "note")
INPUT_STATES = ("queued", "delivered", "dropped")


class Message(Base):
    """Append-only conversation history."""

    __tablename__ = "messages"
    __table_args__ = (
        CheckConstraint(one_of("role", MESSAGE_ROLES), name="role"),
        # Restores read the messages after a summary: cost independent of the history before.
        Index("ix_messages_conversation_key_id", "conversation_key", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE")
    )
    run_id: Mapped[str | None] = mapped_column(String(40), index=True)
    role: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text, default="")
    # Role-specific structure: thinking blocks, tool calls, images, tool_call_id, is_error, source,
    # a person's reply_to with its quote, a forwarded chat record.
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Input(Base):
    """A user message accepted by SendChat, waiting for or delivered to a run.

    Holds the idempotency key, so a retried send finds the original and creates nothing.
    """

    __tablename__ = "inputs"
    __table_args__ = (
        UniqueConstraint("conversation_key", "idempotency_key"),
        CheckConstraint(one_of("state", INPUT_STATES), name="state"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    idempotency_key: Mapped[str] = mapped_column(String(128))
    principal: Mapped[str] = mapped_column(String(128))
    text: Mapped[str] = mapped_column(Text)
    steer: Mapped[bool] = mapped_column(Boolean, default=False)
    detail_mode: Mapped[str] = mapped_column(String(16), default="summary")
    # Set when not a person's message: {"kind": "observation", "trust", "permissions", ...};
    # such an input is delivered as a note and its run carries `permissions`. A post's is
    # {"kind": "post", "posted_by": ...}: delivered as an assistant message, with no run.
    source: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # References of the images sent with it (`[{digest, media_type, size_bytes}]`; the bytes
    # are in `media`), copied into the message's payload on delivery.
    images: Mapped[list[Any]] = mapped_column(default=list, server_default="[]")
    # The message it quotes, and the chat record forwarded with it (`[{speaker, text,
    # images}]`), copied into the message's payload on delivery.
    reply_to: Mapped[int | None] = mapped_column(BigInteger)
    forwarded: Mapped[list[Any]] = mapped_column(default=list, server_default="[]")
    state: Mapped[str] = mapped_column(String(16), default="queued")
    # Set once delivered: the message it became and the run that took it.
    message_id: Mapped[int | None] = mapped_column(BigInteger)
    run_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Media(Base):
    """Image bytes, stored once under their SHA-256; messages refer to them by digest."""

    __tablename__ = "media"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    media_type: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
