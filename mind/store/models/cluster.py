"""Several Minds on one PostgreSQL database (`mind.cluster`): who they are and which
conversation each owns.

A lease's `expires_at` is read on the database's clock only (`now()`), so the Minds' clocks
never have to agree; its `epoch` grows by one at every change of holder and is the fencing
token every write of the conversation's state is checked against.
"""

from __future__ import annotations

from datetime import datetime

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
