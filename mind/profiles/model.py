"""What a profile is: the persona, tools, thinking level and hooks a conversation runs with.

A profile is data the Mind reads at a run's start (and the tool registry on every step): the
operator writes it in `[profiles]` (`mind.profiles.declared`), code shapes it per conversation
with the factory (`mind.profiles.factory`). `DEFAULT_PROFILE` is the built-in one: no persona,
every platform tool, Hand and awareness tools, the configured thinking level.

Platform tools are the Mind's own (built-ins such as `current_time`, `wait`, the memory tools,
and the content tools `view_skill`, `read_resource`); a profile names the ones it offers.
Hand tools come from the attached Hands (of the conversation's active Hand when one is set),
awareness tools from Awareness; a profile takes them or not.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mind.providers.base import ThinkingLevel
from mind.tools.base import Tool, ToolOutcome

DEFAULT_NAME = "default"


@dataclass(frozen=True)
class ConversationInfo:
    """What the factory is told about the conversation it makes a profile for."""

    key: str
    owner: str
    # The profile the conversation is set to.
    profile: str


@dataclass(frozen=True)
class ToolCallInfo:
    """A tool call as the hooks see it: the arguments are a copy, changing them does nothing."""

    conversation_key: str
    run_id: str
    tool_call_id: str
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class TurnInfo:
    """One finished step of a run: what the model wrote and which tools it called."""

    conversation_key: str
    run_id: str
    step: int
    text: str
    tool_calls: tuple[str, ...]


# A reason to block the call (the model reads it as the call's error), or None to let it run.
BeforeToolCall = Callable[[ToolCallInfo], "str | None | Awaitable[str | None]"]
# The outcome the model sees instead of the real one, or None to keep it.
AfterToolCall = Callable[
    [ToolCallInfo, ToolOutcome], "ToolOutcome | None | Awaitable[ToolOutcome | None]"
]
# True ends the run after this step, although the model called tools.
ShouldStopAfterTurn = Callable[[TurnInfo], "bool | Awaitable[bool]"]


@dataclass(frozen=True)
class ProfileHooks:
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    should_stop_after_turn: ShouldStopAfterTurn | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    description: str = ""
    # Static text the system prompt carries after the platform prompt.
    persona: str = ""
    # Platform tools offered, by name; None: every platform tool (the built-in default).
    platform_tools: tuple[str, ...] | None = None
    hand_tools: bool = True
    awareness_tools: bool = True
    # None: the configured `[provider] thinking`; either way clamped to what the model supports.
    thinking: ThinkingLevel | None = None
    # Static texts: the first message of a conversation, and the reply after a failed run.
    welcome: str = ""
    error_reply: str = ""
    # Tools of the profile's own (from code), offered besides the platform tools.
    tools: tuple[Tool, ...] = ()
    hooks: ProfileHooks = field(default_factory=ProfileHooks)
    # The entry decision layer (`mind.actions`) for its conversations; None: `[actions] enabled`.
    actions: bool | None = None
    # The person's IANA time zone for the current-time note; "": the run's principal's
    # (`[scheduler] owner_time_zones`, else `time_zone`).
    time_zone: str = ""

    @property
    def offered_platform_tools(self) -> frozenset[str] | None:
        """The platform tool names as a set (None: all), for the registry's per-step filter."""
        return None if self.platform_tools is None else frozenset(self.platform_tools)


DEFAULT_PROFILE = Profile(
    name=DEFAULT_NAME, description="every platform tool, Hand and awareness tools; no persona"
)
