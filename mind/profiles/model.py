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

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mind.profiles.scope import CancelSignal
from mind.providers.base import ThinkingLevel
from mind.tools.base import Tool, ToolOutcome

if TYPE_CHECKING:
    from mind.agent.platform import ConversationPlatform

DEFAULT_NAME = "default"

# How a step's tool calls run: one after the other, or all at once (results in the order
# they ended, as stored).
ToolExecution = Literal["sequential", "parallel"]


@dataclass(frozen=True)
class ConversationInfo:
    """What the factory is told about the conversation it makes a profile for.

    `platform` and `signal` came later than the rest, with defaults, so a factory that reads
    only the first fields keeps working. `platform` is the conversation's bound capabilities
    (`mind.agent.platform`); None only where no Mind runs the conversation (a test calling
    the factory directly). `signal` fires when the conversation's run is cancelled or stopped,
    when it is deleted and when its actor is evicted; the profile is then made again, with a
    new signal, for the next run.
    """

    key: str
    owner: str
    # The profile the conversation is set to.
    profile: str
    platform: ConversationPlatform | None = None
    signal: CancelSignal = field(default_factory=CancelSignal)


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


@dataclass(frozen=True)
class NextTurnInfo:
    """The run before its next model request: the step that just ended, the steps made so far,
    and what the next request would carry without a change."""

    turn: TurnInfo
    steps: int
    thinking: ThinkingLevel
    tools: tuple[str, ...]


@dataclass(frozen=True)
class NextTurn:
    """Changes for the next model request only; None leaves a part as it is."""

    # Text appended to the system prompt (after a blank line).
    system_addition: str | None = None
    thinking: ThinkingLevel | None = None
    # The tools offered, by name: a subset of `NextTurnInfo.tools` (other names are ignored).
    tools: tuple[str, ...] | None = None


# True ends the run after this step, although the model called tools.
ShouldStopAfterTurn = Callable[[TurnInfo], "bool | Awaitable[bool]"]
# Changes for the next request, or None for none.
PrepareNextTurn = Callable[[NextTurnInfo], "NextTurn | None | Awaitable[NextTurn | None]"]


@dataclass(frozen=True)
class ProfileHooks:
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    should_stop_after_turn: ShouldStopAfterTurn | None = None
    # Called before every model request of a run after its first (when the run goes on).
    prepare_next_turn: PrepareNextTurn | None = None


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
    # Thinking tokens per level, where the model takes a budget (Anthropic, Gemini 2.x);
    # a level not named keeps the adapter's own budget.
    thinking_budgets: Mapping[ThinkingLevel, int] | None = None
    tool_execution: ToolExecution = "sequential"

    @property
    def offered_platform_tools(self) -> frozenset[str] | None:
        """The platform tool names as a set (None: all), for the registry's per-step filter."""
        return None if self.platform_tools is None else frozenset(self.platform_tools)


DEFAULT_PROFILE = Profile(
    name=DEFAULT_NAME, description="every platform tool, Hand and awareness tools; no persona"
)
