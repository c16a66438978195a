"""The agent loop: one run of one conversation, from the first provider call to the stop.

`AgentCore.run` walks these steps:

1. build the request: system prompt (the platform prompt, the profile's persona, the
   catalogs), the provider view of the history (the latest context summary and the messages
   after it), the tools the conversation's profile offers right now; with a
   compaction engine, when the request's estimated size exceeds the budget, compact first;
2. call the provider (streamed deltas go to the ephemeral sink as they arrive); when it
   answers that the request was too long for the model, compact and retry once;
3. give every tool call a Mind-wide id (`call_<uuid hex>`), which everything in the Mind uses
   (projections, approvals, tasks, events), and store the assistant message; each call keeps
   the model's own id in `provider_id` for the provider view to send back;
4. run the tool calls through the tool runtime, in order or at once as the profile says
   (`mind.core.tool_calls`);
5. deliver waiting steering messages; go back to 1 while there were tool calls or steering
   messages (and the profile's `should_stop_after_turn` does not end the run), else stop.
   Before each request after the first, the profile's `prepare_next_turn` may change that
   request alone: a system prompt addition, the thinking level, a subset of the tools.

An empty reply (no text but blanks, no tool calls) is never stored: a person would see an
empty message, and a provider may refuse it when the history is sent back. It ends the run
(unless steering messages wait), as `failed` when the run showed no reply text at all, so
that the conversation's error reply is posted instead of silence.

The profile is the run's `RunScope.profile`. The outcome is `completed` or `failed` (provider
error, step limit, a context over budget that compaction could not bring back within it, a
run that replied nothing, two tools under one name). Cancellation propagates
as `asyncio.CancelledError` after the calls not yet started are recorded as skipped.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from mind.context.budget import Size, fixed_size, request_size
from mind.context.engine import CompactionEngine
from mind.conversation.errors import CompactionFailed
from mind.conversation.history import ContextSummary, HistoryMessage
from mind.core.prompt import PLATFORM_PROMPT, PromptCatalog, system_prompt
from mind.core.tool_calls import run_calls
from mind.core.tool_registry import ToolClash, ToolRegistry
from mind.core.tool_runtime import ProjectionJournal, RunScope, ToolRuntime
from mind.core.view import ProviderView
from mind.errors import WrongState
from mind.events.views import CompactionTrigger, RunState
from mind.profiles import hooks
from mind.profiles.model import NextTurn, NextTurnInfo, Profile, TurnInfo
from mind.providers.base import (
    ErrorKind,
    Provider,
    ProviderRequest,
    ProviderResult,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingLevel,
    ToolCall,
    Usage,
)
from mind.providers.catalog import ModelInfo, clamp_thinking
from mind.tools.base import Tool
from mind.tools.selection import ToolSelection

log = logging.getLogger(__name__)

# (kind "text" | "thinking", step, fragment)
DeltaSink = Callable[[str, int, str], None]
# What the run's last note tells of conversation `key` ("": nothing).
ConversationNotes = Callable[[str], Awaitable[str]]


class RunJournal(ProjectionJournal, Protocol):
    """Durable writes of one run, plus the steering messages waiting for it."""

    async def record_assistant(
        self, step: int, result: ProviderResult, calls: list[ToolCall]
    ) -> HistoryMessage: ...

    def steer_waiting(self) -> bool: ...

    async def take_steers(self) -> list[HistoryMessage]: ...


@dataclass(frozen=True)
class RunLimits:
    """A run's own budget, within the Mind's step limit (a child run's: `delegate`)."""

    # Provider calls (model turns) at most.
    max_steps: int
    # Tokens (input plus output, as the provider reports them) after which no step follows.
    max_tokens: int
    # What earlier runs of the same budget spent (a child's runs before a restart).
    spent_steps: int = 0
    spent_tokens: int = 0


@dataclass
class RunOutcome:
    # COMPLETED or FAILED: a cancel or a stop ends the run outside the loop.
    state: RunState
    reason: str = ""
    steps: int = 0
    usage: Usage = field(default_factory=Usage)


# The current-time note every request ends with (with the person's local time).
_TIME_NOTE = Size(192)
# What `_compact` answers when only the latest messages are left after the summary: the
# request is then too long on its own, which the person is told with the numbers.
_NOTHING_BEFORE = "only the latest messages are left"


@dataclass
class _Context:
    """What a run's requests are built from; a compaction replaces both."""

    messages: list[HistoryMessage]
    summary: ContextSummary | None


def new_tool_call_id() -> str:
    return f"call_{uuid.uuid4().hex}"


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.cached_tokens + b.cached_tokens,
    )


def _ended(selection: ToolSelection, results: list[HistoryMessage]) -> bool:
    """Whether a call that ends the run succeeded in this step."""
    return any(r.tool_name in selection.ends_run and not r.is_error for r in results)


def _exhausted(limits: RunLimits | None, outcome: RunOutcome) -> str:
    """What of the run's own budget is used up before its next step ("" when nothing)."""
    if limits is None:
        return ""
    if limits.spent_steps + outcome.steps >= limits.max_steps:
        return f"budget exhausted: {limits.max_steps} turns"
    used = limits.spent_tokens + outcome.usage.input_tokens + outcome.usage.output_tokens
    if used >= limits.max_tokens:
        return f"budget exhausted: {used} tokens used of {limits.max_tokens}"
    return ""


def _utcnow() -> datetime:
    return datetime.now(UTC)


class AgentCore:
    def __init__(
        self,
        provider: Provider,
        registry: ToolRegistry,
        runtime: ToolRuntime,
        *,
        step_limit: int,
        platform_prompt: str = PLATFORM_PROMPT,
        clock: Callable[[], datetime] = _utcnow,
        thinking: ThinkingLevel = ThinkingLevel.OFF,
        compaction: CompactionEngine | None = None,
        catalog_sources: Sequence[PromptCatalog] = (),
        time_zone_of: Callable[[str], str] = lambda _principal: "",
        conversation_notes: Sequence[ConversationNotes] = (),
    ) -> None:
        self.provider = provider
        self.compaction = compaction
        self.registry = registry
        self.runtime = runtime
        self.step_limit = step_limit
        self.platform_prompt = platform_prompt
        self.clock = clock
        self.thinking = thinking
        self._thinking_warned: set[str] = set()
        # Read once per run, in order (skills, then resources), when `run` gets no catalogs.
        self.catalog_sources = catalog_sources
        # A principal's time zone ("": unknown), unless the profile sets one.
        self.time_zone_of = time_zone_of
        # Read once per run: what the last note tells of the conversation (its widgets).
        self.conversation_notes = conversation_notes

    def thinking_for(
        self, conversation_key: str, wanted: ThinkingLevel | None = None
    ) -> ThinkingLevel:
        """`wanted` (the profile's level; None: the configured one) clamped to what the model
        supports; warns once per conversation.

        Wire adapters expose their catalog entry as `info`; a provider without one (the
        Scripted fixture) gets the level unchanged.
        """
        wanted = self.thinking if wanted is None else wanted
        info = getattr(self.provider, "info", None)
        if not isinstance(info, ModelInfo):
            return wanted
        level, warning = clamp_thinking(info, wanted)
        if warning and conversation_key not in self._thinking_warned:
            self._thinking_warned.add(conversation_key)
            log.warning("conversation %s: %s", conversation_key, warning)
        return level

    async def run(
        self,
        scope: RunScope,
        history: list[HistoryMessage],
        journal: RunJournal,
        on_delta: DeltaSink,
        *,
        catalogs: list[str] | None = None,
        view: ProviderView | None = None,
        summary: ContextSummary | None = None,
        protected: frozenset[str] = frozenset(),
        selection: ToolSelection | None = None,
        limits: RunLimits | None = None,
    ) -> RunOutcome:
        """Run until the model stops; see the module docstring for the steps. `history` holds
        the messages after `summary` (all of them without one); `view` keeps the
        conversation's rendering between runs (a fresh one renders everything); `protected`
        names open calls whose batches a compaction must leave alone; `selection` narrows the
        tools this run may call (`mind.tools.selection`); `limits` is the run's own budget
        (its end says "budget exhausted")."""
        context = _Context(list(history), summary)
        view = view or ProviderView()
        profile, key = scope.profile, scope.conversation_key
        if catalogs is None:
            catalogs = self._catalogs(key, profile)
        system = system_prompt(self.platform_prompt, profile.persona, catalogs)
        zone = profile.time_zone or self.time_zone_of(scope.principal)
        notes = "\n\n".join([text for note in self.conversation_notes if (text := await note(key))])
        outcome = RunOutcome(state=RunState.COMPLETED)
        retried_overflow = False
        replied = False  # whether an assistant message with text was stored in this run
        last_turn: TurnInfo | None = None
        while True:
            if outcome.steps >= self.step_limit:
                outcome.state = RunState.FAILED
                outcome.reason = f"step limit reached: {self.step_limit} provider calls"
                return outcome
            exhausted = _exhausted(limits, outcome)
            if exhausted:
                outcome.state, outcome.reason = RunState.FAILED, exhausted
                return outcome
            try:
                tools = self.registry.tools_for(key, profile)
            except ToolClash as clash:
                outcome.state, outcome.reason = RunState.FAILED, str(clash)
                return outcome
            if selection is not None:
                tools = selection.apply(tools)
            changes = None
            if last_turn is not None:
                level = self.thinking_for(key, profile.thinking)
                next_info = NextTurnInfo(last_turn, outcome.steps, level, tuple(tools))
                changes = await hooks.next_turn(profile, next_info)
                if changes is not None and changes.tools is not None:
                    tools = {name: tool for name, tool in tools.items() if name in changes.tools}
            args = (system, view, context, tools, profile, key, zone, notes, changes)
            request = self._request(*args)
            size = request_size(request)
            if self._over_budget(key, size):
                refused = await self._fit(scope, request, size, context, protected)
                if not refused:
                    request = self._request(*args)
                    size = request_size(request)
                    if self._over_budget(key, size):
                        refused = self._still_over(key, size)
                if refused:
                    outcome.state, outcome.reason = RunState.FAILED, refused
                    return outcome
            step = outcome.steps
            result = await self.provider.complete(request, self._sink(on_delta, step))
            outcome.steps += 1
            outcome.usage = _add(outcome.usage, result.usage)
            if self.compaction is not None:
                self.compaction.estimator.observe(key, size, result.usage)
            overflow = result.error is not None and result.error.kind is ErrorKind.CONTEXT_OVERFLOW
            if overflow and self.compaction is not None and not retried_overflow:
                retried_overflow = True
                assert result.error is not None
                if result.error.window is not None:
                    self.compaction.narrow(result.error.window)
                refused = await self._after_overflow(scope, request, size, context, protected)
                if refused:
                    outcome.state, outcome.reason = RunState.FAILED, refused
                    return outcome
                continue
            retried_overflow = False
            if result.error is not None or result.stop_reason in (
                StopReason.ERROR,
                StopReason.ABORTED,
            ):
                outcome.state = RunState.FAILED
                detail = result.error.message if result.error else result.stop_reason.value
                kind = result.error.kind.value if result.error else "provider"
                outcome.reason = f"provider error ({kind}): {detail}"
                return outcome
            # `provider_id` (the model's own id) is kept; only `id` becomes the Mind's.
            calls = [replace(call, id=new_tool_call_id()) for call in result.tool_calls]
            empty = not calls and not result.text.strip()
            if not empty:
                context.messages.append(await journal.record_assistant(step, result, calls))
                replied = replied or bool(result.text.strip())
            scope.offered = frozenset(tools)
            results = await run_calls(self.runtime, calls, tools, scope, journal.steer_waiting)
            context.messages.extend(results)
            if selection is not None and _ended(selection, results):
                return outcome
            steers = await journal.take_steers()
            context.messages.extend(steers)
            if empty and not steers:
                if replied:
                    outcome.reason = "the model's last reply was empty (not stored)"
                else:
                    outcome.state = RunState.FAILED
                    outcome.reason = "empty reply: the model answered with neither text nor tools"
                return outcome
            if not calls and not steers:
                if result.stop_reason is not StopReason.STOP:
                    outcome.reason = f"model stopped: {result.stop_reason.value}"
                return outcome
            turn = TurnInfo(key, scope.run_id, step, result.text, tuple(c.name for c in calls))
            if await hooks.stops_after(profile, turn):
                outcome.reason = f"stopped by profile {profile.name!r} after step {step}"
                return outcome
            last_turn = turn

    def _request(
        self,
        system: str,
        view: ProviderView,
        context: _Context,
        tools: dict[str, Tool],
        profile: Profile,
        key: str,
        zone: str,
        notes: str,
        changes: NextTurn | None,
    ) -> ProviderRequest:
        """The step's request; `changes` (from `prepare_next_turn`) apply to it alone."""
        wanted = profile.thinking
        if changes is not None:
            if changes.system_addition:
                system = f"{system}\n\n{changes.system_addition}"
            wanted = changes.thinking or wanted
        thinking = self.thinking_for(key, wanted)
        return ProviderRequest(
            system=system,
            messages=view.messages(context.messages, self.clock(), context.summary, zone, notes),
            tools=self.registry.definitions(tools),
            thinking=thinking,
            max_output_tokens=self.compaction.budget.output_tokens if self.compaction else None,
            thinking_budget=(profile.thinking_budgets or {}).get(thinking),
        )

    def _catalogs(self, key: str, profile: Profile) -> list[str]:
        """Each catalog as `profile` sees it: a list only where the profile offers its tool."""
        offered = profile.offered_platform_tools
        return [
            source.catalog_for(
                key, profile.name, with_tool=offered is None or source.tool_name in offered
            )
            for source in self.catalog_sources
        ]

    def fixed_tokens(self, key: str, profile: Profile) -> int:
        """Estimated tokens of what every request of `key` carries besides its messages
        (ToolClash when its profile's tools clash)."""
        if self.compaction is None:
            return 0
        catalogs = self._catalogs(key, profile)
        request = ProviderRequest(
            system=system_prompt(self.platform_prompt, profile.persona, catalogs),
            messages=[],
            tools=self.registry.definitions(self.registry.tools_for(key, profile)),
        )
        return self.compaction.estimator.tokens(key, fixed_size(request))

    def _over_budget(self, key: str, size: Size) -> bool:
        engine = self.compaction
        if engine is None:
            return False
        return engine.estimator.estimate(key, size) > engine.budget.prompt_limit

    def _still_over(self, key: str, size: Size) -> str:
        return self._too_long(key, size)

    def _too_long(self, key: str, size: Size) -> str:
        """One line for a request whose latest messages alone do not fit, with the numbers."""
        engine = self.compaction
        assert engine is not None
        budget = engine.budget
        estimate = engine.estimator.estimate(key, size)
        return (
            f"the latest message is too long for the model: the request needs ~{estimate} "
            f"tokens, and the model's context window of {budget.context_window} tokens takes "
            f"at most {budget.prompt_limit} ({budget.output_tokens} are kept for the reply); "
            "shorten the message, or, if the model's window is larger, give it in "
            "[[provider.models]] context_window"
        )

    async def _fit(
        self,
        scope: RunScope,
        request: ProviderRequest,
        size: Size,
        context: _Context,
        protected: frozenset[str],
    ) -> str:
        """Compact a request over the budget; "" when done, else why the run cannot go on."""
        engine = self.compaction
        assert engine is not None
        key = scope.conversation_key
        estimate = engine.estimator.estimate(key, size)
        why = await self._compact(scope, request, context, protected, CompactionTrigger.BUDGET)
        if why is _NOTHING_BEFORE:
            return self._too_long(key, size)
        if why:
            limit = engine.budget.prompt_limit
            return f"the context is over budget (~{estimate} of {limit} tokens) and {why}"
        return ""

    async def _after_overflow(
        self,
        scope: RunScope,
        request: ProviderRequest,
        size: Size,
        context: _Context,
        protected: frozenset[str],
    ) -> str:
        """The provider found `request` too long: recalibrate, compact; "" to retry once."""
        engine = self.compaction
        assert engine is not None
        at_least = engine.budget.context_window - engine.budget.output_tokens + 1
        engine.estimator.observe_overflow(scope.conversation_key, size, at_least)
        why = await self._compact(scope, request, context, protected, CompactionTrigger.OVERFLOW)
        if why is _NOTHING_BEFORE:
            return self._too_long(scope.conversation_key, size)
        if why:
            return f"the model found the request too long for its context window and {why}"
        return ""

    async def _compact(
        self,
        scope: RunScope,
        request: ProviderRequest,
        context: _Context,
        protected: frozenset[str],
        trigger: CompactionTrigger,
    ) -> str:
        """Compact within this run (which holds the lease); "" when done, `_NOTHING_BEFORE`
        when only the latest messages are left, else why not."""
        engine = self.compaction
        assert engine is not None
        key = scope.conversation_key
        try:
            compacted = await engine.compact(
                key,
                scope.audience,
                trigger=trigger,
                run_id=scope.run_id,
                fixed_tokens=engine.estimator.tokens(key, fixed_size(request) + _TIME_NOTE),
                protected=protected,
            )
        except WrongState:
            return _NOTHING_BEFORE
        except CompactionFailed as exc:
            log.warning("run %s: compaction failed: %s", scope.run_id, exc)
            return f"compaction failed: {exc}"
        context.summary, context.messages = compacted.summary, list(compacted.messages)
        return ""

    @staticmethod
    def _sink(on_delta: DeltaSink, step: int) -> Callable[[StreamEvent], None]:
        def sink(event: StreamEvent) -> None:
            if isinstance(event, TextDelta):
                on_delta("text", step, event.text)
            elif isinstance(event, ThinkingDelta):
                on_delta("thinking", step, event.text)

        return sink
