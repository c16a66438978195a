"""Conversation history as the agent core sees it (independent of the store's tables)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Literal

from mind.providers.base import ImagePart, ThinkingBlock, ToolCall

Role = Literal["user", "assistant", "tool", "note"]


@dataclass(frozen=True)
class QuotedMessage:
    """What a quoting message shows of the message it quotes (`mind.conversation.quotes`)."""

    message_id: int
    speaker: str
    text: str
    has_images: bool


@dataclass(frozen=True)
class ForwardedEntry:
    """One item of a forwarded chat record, with the images whose bytes were read."""

    speaker: str
    text: str
    images: tuple[ImagePart, ...] = ()
    unreadable_images: int = 0


@dataclass(frozen=True)
class HistoryMessage:
    """One stored message, with what the provider view needs to render it."""

    id: int
    role: Role
    text: str
    created_at: datetime
    # The images it carries whose bytes were read, and how many could not be (their bytes
    # are gone from the store): those are shown to the model as unreadable.
    images: tuple[ImagePart, ...] = ()
    unreadable_images: int = 0
    # Assistant only.
    thinking: tuple[ThinkingBlock, ...] = ()
    # Written by code, not the model: "welcome", "error_reply" or the posting principal.
    posted_by: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    # Tool results only.
    tool_call_id: str = ""
    tool_name: str = ""
    is_error: bool = False
    run_id: str = ""
    # A person's message: the message it quotes, and a chat record it forwards.
    quote: QuotedMessage | None = None
    forwarded: tuple[ForwardedEntry, ...] = ()


@dataclass(frozen=True)
class ContextSummary:
    """A compaction's summary: it stands for every message up to `through_message_id`."""

    generation: int
    version: int
    through_message_id: int
    text: str
    # What was going on when it was written: active Hand, pending approvals and tasks, ...
    environment: str
    created_at: datetime


@lru_cache(maxsize=8192)
def gmt_stamp(moment: datetime) -> str:
    """`[YYYY-MM-DD HH:MM:SS GMT] ` for an aware datetime (naive ones are taken as UTC).

    Cached: every request renders the whole history again, and formatting the stamps was more
    than half of that work (a 240-message view: 1.9 → 0.84 ms)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("[%Y-%m-%d %H:%M:%S GMT] ")
