"""Runs of the agent loop: the run itself, a sealed run's key, and the display projection of
each tool call it made."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, UTCDateTime, one_of, utcnow

DETAIL_MODES = ("summary", "transparent")
RUN_STATES = ("running", "completed", "failed", "cancelled", "interrupted")
TOOL_STATUSES = ("running", "succeeded", "failed", "denied", "skipped", "cancelled")


class Run(Base):
    # At most one running run per conversation: a partial unique index the migration creates
    # (`mind.store.models.PARTIAL_INDEXES`).
    __tablename__ = "runs"
    __table_args__ = (
        CheckConstraint(one_of("state", RUN_STATES), name="state"),
        CheckConstraint(one_of("detail_mode", DETAIL_MODES), name="detail_mode"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    state: Mapped[str] = mapped_column(String(16), default="running")
    # "user", "followup", "observation:<trust>", "schedule".
    trigger: Mapped[str] = mapped_column(String(64), default="user")
    detail_mode: Mapped[str] = mapped_column(String(16), default="summary")
    # Permissions of the source that triggered the run (observation trust), as a JSON object.
    permissions: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # What started it, for a person deciding on its approvals ("a medium-trust observation from
    # email@work (INBOX)"; `mind.conversation.origins`); "" for a person's message.
    origin: Mapped[str] = mapped_column(Text, default="")
    reason: Mapped[str] = mapped_column(Text, default="")
    steps: Mapped[int] = mapped_column(Integer, default=0)
    usage: Mapped[dict[str, Any]] = mapped_column(default=dict)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # A sealed run's sensitive tools (tool name → dataset); None for a run that is not sealed.
    sealed: Mapped[dict[str, str] | None] = mapped_column(JSON, default=None)
    # Once its key is deleted: which datasets were queried, with what status.
    redaction: Mapped[list[dict[str, str]] | None] = mapped_column(JSON, default=None)


class TurnKey(Base):
    """The key a sealed run's raw values are encrypted under (`mind.sealing`); deleting the
    row is what makes them unreadable."""

    __tablename__ = "turn_keys"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ToolProjection(Base):
    """Display projection of one tool call: admission, then exactly one terminal."""

    __tablename__ = "tool_projections"
    __table_args__ = (
        CheckConstraint(one_of("admitted_mode", DETAIL_MODES), name="admitted_mode"),
        CheckConstraint(one_of("status", TOOL_STATUSES), name="status"),
    )

    tool_call_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str] = mapped_column(String(40), index=True)
    tool: Mapped[str] = mapped_column(String(128))
    hand_id: Mapped[str] = mapped_column(String(128), default="")
    admitted_mode: Mapped[str] = mapped_column(String(16))
    arguments_summary: Mapped[str] = mapped_column(Text, default="")
    # Versioned projection; raw arguments only when admitted transparent.
    arguments_projection: Mapped[dict[str, Any]] = mapped_column(default=dict)
    projection_version: Mapped[int] = mapped_column(Integer, default=1)
    status: Mapped[str] = mapped_column(String(16), default="running")
    result_summary: Mapped[str] = mapped_column(Text, default="")
    # Raw result only when admitted transparent.
    result_projection: Mapped[dict[str, Any]] = mapped_column(default=dict)
    admitted_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
