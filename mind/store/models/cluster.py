"""Several Minds on one PostgreSQL database (`mind.cluster`): who they are, which
conversation each owns, and which Hands are attached to each.

A lease's `expires_at` is read on the database's clock only (`now()`), so the Minds' clocks
never have to agree; its `epoch` grows by one at every change of holder and is the fencing
token every write of the conversation's state is checked against.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, UTCDateTime, utcnow


class MindNode(Base):
    """A Mind that shares the database: where the others reach it, and when it last renewed."""

    __tablename__ = "mind_nodes"

    node_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    address: Mapped[str] = mapped_column(String(255), default="")
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ConversationLease(Base):
    """The Mind that owns a conversation until `expires_at`, and the lease's epoch. Not a
    foreign key: a lease may be taken for a conversation the same request then creates."""

    __tablename__ = "conversation_leases"

    conversation_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    node_id: Mapped[str] = mapped_column(String(64), index=True)
    epoch: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class AttachedHand(Base):
    """A Hand attached to one of the Minds, as that Mind's hub holds it: the other Minds offer
    its tools and send its tasks through that Mind (`mind.remote.directory`). It counts only
    while its Mind's `mind_nodes.seen_at` is recent; the name is held by the latest attach."""

    __tablename__ = "attached_hands"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    node_id: Mapped[str] = mapped_column(String(64), index=True)
    # The Hand process's id from its hello, and the stream's id (`HandConnection.hand_id`).
    instance_id: Mapped[str] = mapped_column(String(64), default="")
    hand_id: Mapped[str] = mapped_column(String(40))
    principal: Mapped[str] = mapped_column(String(128))
    # Principals whose conversations may use it ("*": everyone), and its declared tools.
    serves: Mapped[list[Any]] = mapped_column(default=list)
    tools: Mapped[list[Any]] = mapped_column(default=list)
    attached_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
