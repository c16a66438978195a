"""Child runs a `delegate` tool call started (`mind.conversation.delegations`).

One row per delegating tool call, keyed by its id, so a replayed call never starts a second
child. The child runs in its own conversation (`child_key`), hidden from the person's list;
the row holds what the child may do (its tools and budget) and, once it ended, the one result
the parent's call takes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, CheckConstraint, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mind.store.models.base import Base, UTCDateTime, one_of, utcnow

DELEGATION_STATES = ("running", "succeeded", "failed", "cancelled")


class Delegation(Base):
    __tablename__ = "delegations"
    __table_args__ = (CheckConstraint(one_of("state", DELEGATION_STATES), name="state"),)

    # The parent's `delegate` call: its execution, as a Hand task is a Hand call's.
    tool_call_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    parent_key: Mapped[str] = mapped_column(String(64), index=True)
    parent_run_id: Mapped[str] = mapped_column(String(64))
    child_key: Mapped[str] = mapped_column(String(64), unique=True)
    principal: Mapped[str] = mapped_column(String(128))
    task: Mapped[str] = mapped_column(Text)
    # Names of the tools the child may call (never more than its parent was offered).
    tools: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # 1 for a child of a person's conversation, 2 for a grandchild, …
    depth: Mapped[int] = mapped_column(Integer, default=1)
    max_turns: Mapped[int] = mapped_column(Integer)
    max_tokens: Mapped[int] = mapped_column(Integer)
    deadline_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # What the child's runs spent so far (each stored model step adds), kept across restarts.
    turns_used: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    tokens_used: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    state: Mapped[str] = mapped_column(String(16), default="running")
    # The child's final answer (succeeded) or what ended it (otherwise).
    result: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
