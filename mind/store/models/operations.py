"""The platform's own bookkeeping: the event outbox, resume cursors, observations already
routed, and the operators' audit."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    String,
)
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, BigId, UTCDateTime, utcnow


class OutboxEvent(Base):
    """Durable events, committed with the state change they describe.

    Ids are visible in increasing order: writers serialise on an outbox lock inside their
    transaction (see `mind.store.outbox`), so a reader never sees id N after id M > N.
    """

    __tablename__ = "outbox"
    # Never reuse an id on SQLite, even after pruning the newest rows: resume points stay valid.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(String(64), default="", index=True)
    type: Mapped[str] = mapped_column(String(64))
    audience: Mapped[list[Any]] = mapped_column(default=list)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Cursor(Base):
    """Named resume positions (e.g. the Awareness publish sequence consumed)."""

    __tablename__ = "cursors"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0)


class SeenObservation(Base):
    """Observations already routed, so a replay after a restart delivers each exactly once."""

    __tablename__ = "seen_observations"

    observation_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(String(64))
    publish_seq: Mapped[int] = mapped_column(BigInteger)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ManagementAudit(Base):
    """Operator actions; details are secret-free JSON."""

    __tablename__ = "management_audit"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    time: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    action: Mapped[str] = mapped_column(String(64), index=True)
    actor: Mapped[str] = mapped_column(String(128), default="")
    target: Mapped[str] = mapped_column(String(256), default="")
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)
