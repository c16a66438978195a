"""The profile options that shape a run's steps: `prepare_next_turn` (changes for one request),
`thinking_budgets` (the budget a request carries) and `tool_execution` (a step's calls in order
or at once), on the agent loop with the Scripted provider and an in-memory journal."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from mind.conversation.history import HistoryMessage
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import RunScope, ToolRuntime
from mind.profiles.model import NextTurn, NextTurnInfo, Profile, ProfileHooks
from mind.providers.base import ProviderRequest, ProviderResult, ThinkingLevel
from mind.scheduler.clock import SystemClock
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode, Effect, ToolContext, ToolOutcome
from mind.tools.builtin import builtin_tools
from tests.mind.test_agent_loop import MemoryJournal, T

THREE_STEPS = """
runs:
  - match: go
    steps:
      - tool_calls: [{name: current_time, arguments: {}}]
      - tool_calls: [{name: current_time, arguments: {}}]
      - text: "done"
"""
BOTH_AT_ONCE = """
runs:
  - match: go
    steps:
      - tool_calls: [{name: meet_a, arguments: {}}, {name: meet_b, arguments: {}}]
      - text: "met"
"""


class Recording:
    """The Scripted provider, keeping every request it was sent."""

    def __init__(self, script: str) -> None:
        self._provider = ScriptedProvider(parse_script(script, "test"))
        self.requests: list[ProviderRequest] = []

    async def complete(self, request: ProviderRequest, on_event: Any) -> ProviderResult:
        self.requests.append(request)
        return await self._provider.complete(request, on_event)


class Meeting:
    """A tool that returns only once the other one of its pair has started too."""

    parameters: dict[str, Any] = {"type": "object"}
    effect, hand_id, description = Effect.READ_ONLY, "", "meets the other"

    def __init__(self, name: str, barrier: asyncio.Barrier) -> None:
        self.name = name
        self._barrier = barrier

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            await asyncio.wait_for(self._barrier.wait(), timeout=2)
        except TimeoutError:
            return ToolOutcome(ok=False, error="alone")
        return ToolOutcome(ok=True, output=f"{self.name} met")


def _core(provider: Recording, *extra: Any) -> AgentCore:
    registry = ToolRegistry([*builtin_tools(SystemClock().now), *extra])
    return AgentCore(provider, registry, ToolRuntime(AllowAll()), step_limit=10, clock=lambda: T)


async def _run(core: AgentCore, profile: Profile) -> tuple[str, MemoryJournal]:
    journal = MemoryJournal()
    scope = RunScope(
        "p_c", "run_1", "alice", DetailMode.TRANSPARENT, journal, lambda *a: None, profile=profile
    )
    history = [HistoryMessage(0, "user", "go", T)]
    outcome = await core.run(scope, history, journal, lambda *d: None)
    return outcome.state, journal


def _tool_names(request: ProviderRequest) -> list[str]:
    return [tool.name for tool in request.tools]


async def test_prepare_next_turn_changes_only_the_next_request() -> None:
    seen: list[NextTurnInfo] = []

    def prepare(info: NextTurnInfo) -> NextTurn | None:
        seen.append(info)
        if info.steps != 1:
            return None
        return NextTurn(
            system_addition="Answer in one line now.",
            thinking=ThinkingLevel.HIGH,
            tools=("current_time", "no_such_tool"),
        )

    provider = Recording(THREE_STEPS)
    profile = Profile("brief", hooks=ProfileHooks(prepare_next_turn=prepare))
    state, _journal = await _run(_core(provider), profile)

    assert state == "completed"
    first, second, third = provider.requests
    assert [info.steps for info in seen] == [1, 2]
    assert seen[0].turn.tool_calls == ("current_time",) and "wait" in seen[0].tools
    assert second.system == f"{first.system}\n\nAnswer in one line now."
    assert (second.thinking, _tool_names(second)) == (ThinkingLevel.HIGH, ["current_time"])
    # The changes were for that request alone.
    assert (third.system, third.thinking) == (first.system, first.thinking)
    assert _tool_names(third) == _tool_names(first)


async def test_a_raising_prepare_next_turn_changes_nothing_and_the_run_goes_on() -> None:
    def broken(info: NextTurnInfo) -> NextTurn | None:
        raise RuntimeError("bug in the profile")

    provider = Recording(THREE_STEPS)
    profile = Profile("broken", hooks=ProfileHooks(prepare_next_turn=broken))
    state, _journal = await _run(_core(provider), profile)

    assert state == "completed"
    first, *later = provider.requests
    assert all((r.system, r.tools) == (first.system, first.tools) for r in later)


async def test_a_profiles_thinking_budget_goes_with_its_level_only() -> None:
    provider = Recording(THREE_STEPS)
    budgets = {ThinkingLevel.HIGH: 3000}
    profile = Profile("deep", thinking=ThinkingLevel.HIGH, thinking_budgets=budgets)
    await _run(_core(provider), profile)
    other = Recording(THREE_STEPS)
    await _run(_core(other), replace(profile, thinking=ThinkingLevel.LOW))

    assert {r.thinking_budget for r in provider.requests} == {3000}
    assert {r.thinking_budget for r in other.requests} == {None}


async def test_parallel_tool_execution_runs_a_steps_calls_at_once() -> None:
    barrier = asyncio.Barrier(2)
    core = _core(Recording(BOTH_AT_ONCE), Meeting("meet_a", barrier), Meeting("meet_b", barrier))
    state, journal = await _run(core, Profile("fast", tool_execution="parallel"))

    assert state == "completed"
    results = {(m.tool_name, m.text, m.is_error) for m in journal.messages if m.role == "tool"}
    assert results == {("meet_a", "meet_a met", False), ("meet_b", "meet_b met", False)}


async def test_sequential_tool_execution_the_default_runs_one_call_after_the_other() -> None:
    barrier = asyncio.Barrier(2)
    core = _core(Recording(BOTH_AT_ONCE), Meeting("meet_a", barrier), Meeting("meet_b", barrier))
    state, journal = await _run(core, Profile("plain"))

    assert state == "completed" and Profile("plain").tool_execution == "sequential"
    results = [(m.tool_name, m.is_error) for m in journal.messages if m.role == "tool"]
    # The first call waited alone: the second had not started.
    assert results[0] == ("meet_a", True)
