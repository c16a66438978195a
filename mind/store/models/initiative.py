"""The Mind's own initiative: actions waiting for their owner, scheduled actions, their firings."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, BigId, UTCDateTime, one_of, utcnow

PENDING_ACTION_STATES = ("pending", "confirmed", "cancelled", "amended", "expired")
ACTION_TIMINGS = ("immediate", "planned")
SCHEDULE_STATES = ("active", "paused", "finished", "deleted")
FIRING_OUTCOMES = ("running", "sent", "skipped", "failed", "aborted")


class PendingAction(Base):
    """An action the decision layer planned that waits for its owner (`mind.actions`)."""

    __tablename__ = "pending_actions"
    __table_args__ = (
        CheckConstraint(one_of("state", PENDING_ACTION_STATES), name="state"),
        CheckConstraint(one_of("timing", ACTION_TIMINGS), name="timing"),
        Index("ix_pending_actions_conversation_key_state", "conversation_key", "state"),
        # The expiry sweep reads the pending ones by deadline.
        Index("ix_pending_actions_state_expires_at", "state", "expires_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE")
    )
    owner: Mapped[str] = mapped_column(String(128))
    # The run whose decision registered it.
    run_id: Mapped[str] = mapped_column(String(40), default="")
    title: Mapped[str] = mapped_column(Text)
    goal: Mapped[str] = mapped_column(Text)
    timing: Mapped[str] = mapped_column(String(16))
    # `[PlanStepView payload]`, and the `TriggerView` payload (planned only).
    plan: Mapped[list[Any]] = mapped_column(default=list)
    trigger: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(16), default="pending")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    outcome: Mapped[str] = mapped_column(String(64), default="")


class ScheduledAction(Base):
    """A durable scheduled action (`mind.scheduler`): its plan, trigger and next due time."""

    __tablename__ = "scheduled_actions"
    __table_args__ = (
        CheckConstraint(one_of("state", SCHEDULE_STATES), name="state"),
        # The scheduler reads the active ones by due time.
        Index("ix_scheduled_actions_state_next_fire_at", "state", "next_fire_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    owner: Mapped[str] = mapped_column(String(128))
    title: Mapped[str] = mapped_column(Text)
    goal: Mapped[str] = mapped_column(Text)
    plan: Mapped[list[Any]] = mapped_column(default=list)
    # `TriggerView` payload; `trigger_kind` repeats its kind for the condition lookups.
    trigger: Mapped[dict[str, Any]] = mapped_column(default=dict)
    trigger_kind: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16), default="active")
    next_fire_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    catch_up: Mapped[bool] = mapped_column(Boolean, default=False)
    firing_count: Mapped[int] = mapped_column(Integer, default=0)
    # The pending action or run it came from.
    source: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Firing(Base):
    """One firing of a scheduled action, claimed in the unit that moves its next due time.

    `occasion` names what fired it (`time:<due ISO>`, `observation:<id>`, `memory:<event id>`)
    and is unique per action, so a replayed claim inserts nothing."""

    __tablename__ = "firings"
    __table_args__ = (
        UniqueConstraint("schedule_id", "occasion"),
        CheckConstraint(one_of("outcome", FIRING_OUTCOMES), name="outcome"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    schedule_id: Mapped[str] = mapped_column(
        ForeignKey("scheduled_actions.id", ondelete="CASCADE"), index=True
    )
    conversation_key: Mapped[str] = mapped_column(String(64))
    occasion: Mapped[str] = mapped_column(String(128))
    due_at: Mapped[datetime] = mapped_column(UTCDateTime())
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    outcome: Mapped[str] = mapped_column(String(16), default="running")
    # Set when its input was delivered to a run: the latest of its attempts.
    run_id: Mapped[str] = mapped_column(String(40), default="")
    # How many proactive runs it started; a run a crash interrupted is retried up to
    # `mind.agent.proactive.MAX_ATTEMPTS`.
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    detail: Mapped[str] = mapped_column(Text, default="")
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
