"""Conversations and their contexts: members, sessions, compaction summaries and memory."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, BigId, UTCDateTime, utcnow


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (
        CheckConstraint(
            "key LIKE 'p\\_%' ESCAPE '\\' OR key LIKE 'g\\_%' ESCAPE '\\'", name="key_prefix"
        ),
    )

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str] = mapped_column(String(128), index=True)
    title: Mapped[str] = mapped_column(String(256), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # Hand this conversation's tools run on (its name); empty means none chosen.
    active_hand: Mapped[str] = mapped_column(String(128), default="")
    # Generation of the latest context summary (0: none); compaction compares and sets it.
    context_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Profile the conversation runs with; empty: the default profile.
    profile: Mapped[str] = mapped_column(String(64), default="", server_default="")
    # What made it (`mind.conversation.kinds`): a person's "chat", or one the platform made
    # for "awareness" observations; clients open a person's own conversations first.
    kind: Mapped[str] = mapped_column(String(16), default="chat", server_default="chat")
    # Left out of the default list (`ListConversations`); still readable, searchable, writable.
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # A branch's origin (`mind.conversation.branches`): the conversation and the message it
    # was branched at, kept as written (the origin may since have been deleted); empty and 0
    # for a conversation that is no branch.
    branched_from_key: Mapped[str] = mapped_column(String(64), default="", server_default="")
    branched_from_message_id: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class ConversationMember(Base):
    """Principals besides the owner who may use a group (`g_`) conversation."""

    __tablename__ = "conversation_members"

    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), primary_key=True
    )
    principal: Mapped[str] = mapped_column(String(128), primary_key=True, index=True)


class Summary(Base):
    """Context summary covering a prefix of a conversation's messages (compaction)."""

    __tablename__ = "summaries"
    __table_args__ = (UniqueConstraint("conversation_key", "generation"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    # Messages with id <= this are covered by the summary.
    through_message_id: Mapped[int] = mapped_column(BigInteger)
    generation: Mapped[int] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer, default=1)
    text: Mapped[str] = mapped_column(Text)
    environment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class MemoryEntry(Base):
    """One entry of a conversation's memory (the profiles' memory tools, the owner)."""

    __tablename__ = "memory_entries"

    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
