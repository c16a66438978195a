"""Approvals of tool calls: requests and their one decision, conversation grants, the audit."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, BigId, UTCDateTime, one_of, utcnow

APPROVAL_DECISIONS = ("approve_once", "approve_conversation", "deny", "expired")
EFFECTS = ("read_only", "workspace_write", "external_side_effect", "unknown")


class Approval(Base):
    __tablename__ = "approvals"
    __table_args__ = (
        CheckConstraint(
            f"decision IS NULL OR {one_of('decision', APPROVAL_DECISIONS)}", name="decision"
        ),
        CheckConstraint(one_of("effect", EFFECTS), name="effect"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE"), index=True
    )
    run_id: Mapped[str] = mapped_column(String(40))
    tool_call_id: Mapped[str] = mapped_column(String(128), unique=True)
    tool: Mapped[str] = mapped_column(String(128))
    effect: Mapped[str] = mapped_column(String(32))
    hand_id: Mapped[str] = mapped_column(String(128), default="")
    arguments_summary: Mapped[str] = mapped_column(Text, default="")
    arguments_digest: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(Text, default="")
    # What the person decides on, in every detail mode (`mind.tools.decision`).
    decision_text: Mapped[str] = mapped_column(Text, default="")
    # What started the run that made the call (`runs.origin`).
    origin: Mapped[str] = mapped_column(Text, default="")
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    decision: Mapped[str | None] = mapped_column(String(32))
    decided_by: Mapped[str | None] = mapped_column(String(128))
    decision_reason: Mapped[str] = mapped_column(Text, default="")
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class ApprovalGrant(Base):
    """The Actor's persisted approval cache ("approve for this conversation")."""

    __tablename__ = "approval_grants"
    __table_args__ = (UniqueConstraint("conversation_key", "tool", "hand_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_key: Mapped[str] = mapped_column(
        ForeignKey("conversations.key", ondelete="CASCADE")
    )
    tool: Mapped[str] = mapped_column(String(128))
    hand_id: Mapped[str] = mapped_column(String(128), default="")
    approval_id: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ApprovalAudit(Base):
    """Security audit of every verdict: summaries and structured verdicts, never raw arguments."""

    __tablename__ = "approval_audit"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    approval_id: Mapped[str | None] = mapped_column(String(40), index=True)
    conversation_key: Mapped[str] = mapped_column(String(64), index=True)
    tool_call_id: Mapped[str] = mapped_column(String(128))
    tool: Mapped[str] = mapped_column(String(128))
    # "policy", "reviewer", "user", "expiry", "grant", "run", "arguments" (`AuditSource`).
    source: Mapped[str] = mapped_column(String(16))
    verdict: Mapped[str] = mapped_column(String(32))
    principal: Mapped[str] = mapped_column(String(128), default="")
    summary: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
