"""The agent loop: one run of one conversation, from the first provider call to the stop.

`AgentCore.run` walks these steps:

1. build the request: system prompt, the provider view of the complete history, the tools
   this conversation may call right now;
2. call the provider (streamed deltas go to the ephemeral sink as they arrive);
3. give every tool call a Mind-wide id (`call_<uuid hex>`), which everything in the Mind uses
   (projections, approvals, tasks, events), and store the assistant message; each call keeps
   the model's own id in `provider_id` for the provider view to send back;
4. run the tool calls in order through the tool runtime; when a steering message is waiting,
   the calls not yet started are recorded as skipped;
5. deliver waiting steering messages; go back to 1 while there were tool calls or steering
   messages, else stop.

The outcome is `completed` or `failed` (provider error, step limit). Cancellation propagates
as `asyncio.CancelledError` after the calls not yet started are recorded as skipped.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal, Protocol

from mind.core.history import HistoryMessage
from mind.core.prompt import PLATFORM_PROMPT, PromptCatalog, system_prompt
from mind.core.view import ProviderView
from mind.providers.base import (
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
from mind.tools.registry import ToolRegistry
from mind.tools.runtime import ProjectionJournal, RunScope, ToolRuntime

log = logging.getLogger(__name__)

# (kind "text" | "thinking", step, fragment)
DeltaSink = Callable[[str, int, str], None]


class RunJournal(ProjectionJournal, Protocol):
    """Durable writes of one run, plus the steering messages waiting for it."""

    async def record_assistant(
        self, step: int, result: ProviderResult, calls: list[ToolCall]
    ) -> HistoryMessage: ...

    def steer_waiting(self) -> bool: ...

    async def take_steers(self) -> list[HistoryMessage]: ...


@dataclass
class RunOutcome:
    state: Literal["completed", "failed"]
    reason: str = ""
    steps: int = 0
    usage: Usage = field(default_factory=Usage)


def new_tool_call_id() -> str:
    return f"call_{uuid.uuid4().hex}"


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.cached_tokens + b.cached_tokens,
    )


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
        catalog_sources: Sequence[PromptCatalog] = (),
    ) -> None:
        self.provider = provider
        self.registry = registry
        self.runtime = runtime
        self.step_limit = step_limit
        self.platform_prompt = platform_prompt
        self.clock = clock
        self.thinking = thinking
        self._thinking_warned: set[str] = set()
        # Read once per run, in order (skills, then resources), when `run` gets no catalogs.
        self.catalog_sources = catalog_sources

    def thinking_for(self, conversation_key: str) -> ThinkingLevel:
        """The configured level clamped to what the model supports; warns once per conversation.

        Wire adapters expose their catalog entry as `info`; a provider without one (the
        Scripted fixture) gets the level unchanged.
        """
        info = getattr(self.provider, "info", None)
        if not isinstance(info, ModelInfo):
            return self.thinking
        level, warning = clamp_thinking(info, self.thinking)
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
        persona: str = "",
        catalogs: list[str] | None = None,
        view: ProviderView | None = None,
    ) -> RunOutcome:
        """Run until the model stops; see the module docstring for the steps. `view` keeps
        the conversation's rendering between runs (a fresh one renders everything)."""
        history = list(history)
        view = view or ProviderView()
        if catalogs is None:
            catalogs = [s.catalog_for(scope.conversation_key) for s in self.catalog_sources]
        system = system_prompt(self.platform_prompt, persona, catalogs)
        outcome = RunOutcome(state="completed")
        while True:
            if outcome.steps >= self.step_limit:
                outcome.state = "failed"
                outcome.reason = f"step limit reached: {self.step_limit} provider calls"
                return outcome
            tools = self.registry.tools_for(scope.conversation_key)
            request = ProviderRequest(
                system=system,
                messages=view.messages(history, self.clock()),
                tools=self.registry.definitions(tools),
                thinking=self.thinking_for(scope.conversation_key),
            )
            step = outcome.steps
            result = await self.provider.complete(request, self._sink(on_delta, step))
            outcome.steps += 1
            outcome.usage = _add(outcome.usage, result.usage)
            if result.error is not None or result.stop_reason in (
                StopReason.ERROR,
                StopReason.ABORTED,
            ):
                outcome.state = "failed"
                detail = result.error.message if result.error else result.stop_reason.value
                kind = result.error.kind.value if result.error else "provider"
                outcome.reason = f"provider error ({kind}): {detail}"
                return outcome
            # `provider_id` (the model's own id) is kept; only `id` becomes the Mind's.
            calls = [replace(call, id=new_tool_call_id()) for call in result.tool_calls]
            history.append(await journal.record_assistant(step, result, calls))
            history.extend(await self._run_calls(calls, tools, scope, journal))
            steers = await journal.take_steers()
            history.extend(steers)
            if not calls and not steers:
                if result.stop_reason is not StopReason.STOP:
                    outcome.reason = f"model stopped: {result.stop_reason.value}"
                return outcome

    async def _run_calls(
        self,
        calls: list[ToolCall],
        tools: dict[str, Tool],
        scope: RunScope,
        journal: RunJournal,
    ) -> list[HistoryMessage]:
        results: list[HistoryMessage] = []
        for index, call in enumerate(calls):
            if journal.steer_waiting():
                for rest in calls[index:]:
                    results.append(
                        await self.runtime.skip(
                            rest, tools.get(rest.name), scope, "a new user message arrived first"
                        )
                    )
                return results
            try:
                results.append(await self.runtime.execute(call, tools.get(call.name), scope))
            except asyncio.CancelledError:
                for rest in calls[index + 1 :]:
                    await asyncio.shield(
                        self.runtime.skip(
                            rest, tools.get(rest.name), scope, "the run was cancelled"
                        )
                    )
                raise
        return results

    @staticmethod
    def _sink(on_delta: DeltaSink, step: int) -> Callable[[StreamEvent], None]:
        def sink(event: StreamEvent) -> None:
            if isinstance(event, TextDelta):
                on_delta("text", step, event.text)
            elif isinstance(event, ThinkingDelta):
                on_delta("thinking", step, event.text)

        return sink
