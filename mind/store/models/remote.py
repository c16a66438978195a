"""Remote work on Hands: a Hand's runs, its tasks and every transition of a task."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    ForeignKey,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, BigId, UTCDateTime, one_of, utcnow

TASK_STATES = (
    "offered",
    "accepted",
    "succeeded",
    "failed",
    "rejected",
    "cancelled",
    "timed_out",
    "lost",
)
TASK_TERMINALS = ("succeeded", "failed", "rejected", "cancelled", "timed_out", "lost")


class RemoteRun(Base):
    """Remote work of one Hand for one conversation run (foreground) or a background job."""

    __tablename__ = "remote_runs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str] = mapped_column(String(40), default="")
    hand_name: Mapped[str] = mapped_column(String(128))
    background: Mapped[bool] = mapped_column(Boolean, default=False)
    detail_mode: Mapped[str] = mapped_column(String(16), default="summary")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Task(Base):
    """One remote tool call; its state changes only through recorded transitions."""

    __tablename__ = "tasks"
    __table_args__ = (CheckConstraint(one_of("state", TASK_STATES), name="state"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    remote_run_id: Mapped[str] = mapped_column(
        ForeignKey("remote_runs.id", ondelete="CASCADE"), index=True
    )
    tool_call_id: Mapped[str] = mapped_column(String(128), index=True)
    hand_name: Mapped[str] = mapped_column(String(128), index=True)
    tool: Mapped[str] = mapped_column(String(128))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    state: Mapped[str] = mapped_column(String(16), default="offered")
    arguments: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The call's `ApprovalBinding`, sent with every offer; all empty when it has none.
    arguments_digest: Mapped[str] = mapped_column(String(64), default="")
    approval_source: Mapped[str] = mapped_column(String(16), default="")
    approval_id: Mapped[str] = mapped_column(String(40), default="")
    approval_detail: Mapped[str] = mapped_column(Text, default="")
    cancel_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    cancel_reason: Mapped[str] = mapped_column(Text, default="")
    output: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str] = mapped_column(Text, default="")
    # References of the images its result carried (`[{digest, media_type, size_bytes}]`; the
    # bytes are in `media`), copied into the call's tool message.
    images: Mapped[list[Any]] = mapped_column(default=list, server_default="[]")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class TaskTransition(Base):
    # At most one terminal transition per task: a partial unique index the migration creates
    # (`mind.store.models.PARTIAL_INDEXES`).
    __tablename__ = "task_transitions"
    __table_args__ = (CheckConstraint(one_of("to_state", TASK_STATES), name="to_state"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    from_state: Mapped[str] = mapped_column(String(16), default="")
    to_state: Mapped[str] = mapped_column(String(16))
    terminal: Mapped[bool] = mapped_column(Boolean, default=False)
    detail: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
