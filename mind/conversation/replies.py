"""The fixed texts code posts into a conversation: its welcome and its reply to a failed run.

The manager and the actors ask a `ReplyTexts` per conversation rather than reading settings, so
what a conversation says can depend on the conversation (its profile) without them knowing
how. `ConfiguredReplies` gives every conversation the Mind-wide `[mind] welcome` and
`[mind] error_reply`. An empty text means nothing is posted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tobe.config import MindSettings


class ReplyTexts(Protocol):
    """Asked from the event loop, outside any unit of work: answer at once, never block."""

    def welcome(self, key: str) -> str:
        """Posted as conversation `key` is created (in the same unit of work)."""
        ...

    def error_reply(self, key: str) -> str:
        """Posted after a run of `key` failed, once its failure is recorded."""
        ...


@dataclass(frozen=True)
class ConfiguredReplies:
    """The same texts for every conversation."""

    welcome_text: str = ""
    error_reply_text: str = ""

    @classmethod
    def from_settings(cls, settings: MindSettings) -> ConfiguredReplies:
        return cls(settings.welcome, settings.error_reply)

    def welcome(self, key: str) -> str:
        return self.welcome_text

    def error_reply(self, key: str) -> str:
        return self.error_reply_text
