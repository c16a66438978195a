"""The agent loop and the tool runtime, with an in-memory journal and the Scripted provider."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from helpers.eventually import eventually_async

from mind.conversation.history import HistoryMessage
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolClash, ToolRegistry
from mind.core.tool_runtime import Admission, RunScope, Terminal, ToolRuntime
from mind.providers.base import (
    ProviderRequest,
    ProviderResult,
    StopReason,
    ThinkingLevel,
    ToolCall,
)
from mind.providers.catalog import ModelInfo
from mind.scheduler.clock import SystemClock
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.tools.authorizer import AllowAll, CallUnderReview, Verdict
from mind.tools.base import DetailMode, Effect, ToolContext, ToolOutcome
from mind.tools.builtin import builtin_tools

T = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)


class MemoryJournal:
    """Keeps what the loop would store, in order."""

    def __init__(self, steers: list[str] | None = None) -> None:
        self.messages: list[HistoryMessage] = []
        self.admissions: dict[str, Admission] = {}
        self.terminals: dict[str, Terminal] = {}
        self.steers = steers or []

    def _add(self, **kw: Any) -> HistoryMessage:
        message = HistoryMessage(id=len(self.messages) + 1, created_at=T, **kw)
        self.messages.append(message)
        return message

    async def record_assistant(self, step: int, result: ProviderResult, calls: list[ToolCall]):
        return self._add(role="assistant", text=result.text, tool_calls=tuple(calls))

    async def admit(self, admission: Admission) -> None:
        assert admission.tool_call_id not in self.admissions
        self.admissions[admission.tool_call_id] = admission

    async def finish(self, terminal: Terminal) -> HistoryMessage:
        assert terminal.tool_call_id in self.admissions
        assert terminal.tool_call_id not in self.terminals, "second terminal"
        self.terminals[terminal.tool_call_id] = terminal
        return self._add(
            role="tool",
            text=terminal.model_text,
            tool_call_id=terminal.tool_call_id,
            tool_name=terminal.tool,
            is_error=terminal.is_error,
        )

    async def skip(self, admission: Admission, terminal: Terminal) -> HistoryMessage:
        await self.admit(admission)
        return await self.finish(terminal)

    def steer_waiting(self) -> bool:
        return bool(self.steers)

    async def take_steers(self) -> list[HistoryMessage]:
        taken = [self._add(role="user", text=text) for text in self.steers]
        self.steers = []
        return taken


class Boom:
    name, description, effect, hand_id = "boom", "raises", Effect.READ_ONLY, ""
    parameters: dict[str, Any] = {"type": "object"}

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        raise RuntimeError("kaboom")


class DenyWait:
    def begin_shutdown(self) -> None:
        """Nothing to keep pending."""

    async def authorize(self, call: CallUnderReview) -> Verdict:
        return Verdict.deny("waiting is not allowed") if call.tool == "wait" else Verdict.allow()


def _core(script: str, *, step_limit: int = 10, authorizer=None) -> AgentCore:
    registry = ToolRegistry([*builtin_tools(SystemClock().now), Boom()])
    provider = ScriptedProvider(parse_script(script, "test"))
    return AgentCore(
        provider,
        registry,
        ToolRuntime(authorizer or AllowAll()),
        step_limit=step_limit,
        clock=lambda: T,
    )


def _scope(journal: MemoryJournal, mode: DetailMode = DetailMode.TRANSPARENT) -> RunScope:
    return RunScope("p_c", "run_1", "alice", mode, journal, lambda *a: None)


async def _run(core: AgentCore, journal: MemoryJournal, text: str = "go", **kw):
    history = [HistoryMessage(0, "user", text, T)]
    deltas: list[tuple[str, int, str]] = []
    outcome = await core.run(_scope(journal, **kw), history, journal, lambda *d: deltas.append(d))
    return outcome, deltas


TOOL_TURN = """
runs:
  - match: go
    steps:
      - text: "checking"
        tool_calls: [{name: current_time, arguments: {}}, {name: boom, arguments: {}}]
      - {expect: {last_role: tool, last_contains: "RuntimeError"}, text: "done"}
"""


async def test_a_tool_turn_rewrites_call_ids_and_runs_until_the_model_stops():
    journal = MemoryJournal()
    outcome, deltas = await _run(_core(TOOL_TURN), journal)
    assert (outcome.state, outcome.steps) == ("completed", 2)
    roles = [m.role for m in journal.messages]
    assert roles == ["assistant", "tool", "tool", "assistant"]
    ids = [c.id for c in journal.messages[0].tool_calls]
    assert all(re.fullmatch(r"call_[0-9a-f]{32}", i) for i in ids) and len(set(ids)) == 2
    assert [m.tool_call_id for m in journal.messages[1:3]] == ids
    assert not journal.messages[1].is_error
    assert journal.messages[2].is_error and "RuntimeError" in journal.messages[2].text
    assert journal.messages[-1].text == "done"
    assert ("text", 0, "checking") in deltas and ("text", 1, "done") in deltas


class IdIssuingProvider:
    """Asks for `current_time` under the model's own id once, then answers; keeps requests."""

    name, model = "stub", "stub"

    def __init__(self) -> None:
        self.requests: list[ProviderRequest] = []

    async def complete(self, request: ProviderRequest, on_event: Any) -> ProviderResult:
        self.requests.append(request)
        if len(self.requests) == 1:
            call = ToolCall("toolu_01X", "current_time", {}, "{}", provider_id="toolu_01X")
            return ProviderResult(tool_calls=[call], stop_reason=StopReason.TOOL_USE)
        return ProviderResult(text="done")

    async def aclose(self) -> None:
        return None


async def test_the_mind_uses_its_own_call_ids_and_the_model_gets_its_own_back():
    provider = IdIssuingProvider()
    core = AgentCore(
        provider,
        ToolRegistry(builtin_tools(SystemClock().now)),
        ToolRuntime(AllowAll()),
        step_limit=5,
        clock=lambda: T,
    )
    journal = MemoryJournal()
    outcome, _ = await _run(core, journal)

    assert outcome.state == "completed"
    (stored,) = journal.messages[0].tool_calls
    assert re.fullmatch(r"call_[0-9a-f]{32}", stored.id) and stored.provider_id == "toolu_01X"
    assert list(journal.admissions) == [stored.id]
    assert journal.messages[1].tool_call_id == stored.id
    follow_up = provider.requests[1].messages
    assistant = next(m for m in follow_up if m.role == "assistant")
    result = next(m for m in follow_up if m.role == "tool")
    assert [c.id for c in assistant.tool_calls] == ["toolu_01X"]
    assert result.tool_call_id == "toolu_01X"


async def test_the_step_limit_ends_the_run_as_failed():
    script = (
        "runs: [{match: go, steps: ["
        + ", ".join(["{tool_calls: [{name: current_time, arguments: {}}]}"] * 5)
        + "]}]"
    )
    outcome, _ = await _run(_core(script, step_limit=3), MemoryJournal())
    assert outcome.state == "failed" and outcome.reason == "step limit reached: 3 provider calls"
    assert outcome.steps == 3


async def test_a_provider_error_fails_the_run_without_storing_a_message():
    journal = MemoryJournal()
    outcome, _ = await _run(_core("runs: [{match: go, steps: [{error: down}]}]"), journal)
    assert outcome.state == "failed" and outcome.reason == "provider error (stream): down"
    assert journal.messages == []


async def test_a_waiting_steer_skips_the_remaining_calls_and_is_delivered_next():
    script = """
runs:
  - match: go
    steps:
      - tool_calls: [{name: current_time, arguments: {}}, {name: current_time, arguments: {}}]
  - match: stop
    steps:
      - {expect: {last_role: user}, text: "ok, stopping"}
"""
    journal = MemoryJournal(steers=["stop that"])
    outcome, _ = await _run(_core(script), journal)
    assert outcome.state == "completed"
    statuses = [t.status for t in journal.terminals.values()]
    assert statuses == ["skipped", "skipped"]
    assert [m.role for m in journal.messages] == ["assistant", "tool", "tool", "user", "assistant"]
    assert journal.messages[-1].text == "ok, stopping"


async def test_schema_failures_and_denials_are_tool_errors_and_nothing_runs():
    script = """
runs:
  - match: go
    steps:
      - tool_calls: [{name: wait, arguments: {seconds: -1}}, {name: wait, arguments: {seconds: 0}},
                     {name: nope, arguments: {}}]
      - {text: fine}
"""
    journal = MemoryJournal()
    outcome, _ = await _run(_core(script, authorizer=DenyWait()), journal)
    assert outcome.state == "completed"
    first, second, third = journal.terminals.values()
    assert first.status == "failed" and "at seconds" in first.model_text
    assert second.status == "denied" and "waiting is not allowed" in second.model_text
    assert third.status == "failed" and "no tool named 'nope'" in third.model_text


async def test_summary_admissions_keep_no_raw_arguments_or_results():
    journal = MemoryJournal()
    await _run(_core(TOOL_TURN), journal, mode=DetailMode.SUMMARY)
    for admission in journal.admissions.values():
        assert "arguments_json" not in admission.arguments_projection
    for terminal in journal.terminals.values():
        assert terminal.result_projection == {}
        assert re.fullmatch(r"(succeeded|failed), \d+ chars", terminal.result_summary)


async def test_cancelling_during_a_tool_records_it_cancelled_and_skips_the_rest():
    script = """
runs:
  - match: go
    steps:
      - tool_calls: [{name: wait, arguments: {seconds: 60}}, {name: current_time, arguments: {}}]
"""
    journal = MemoryJournal()
    task = asyncio.create_task(_run(_core(script), journal))
    await eventually_async(lambda: journal.admissions, what="the first tool call admitted")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [t.status for t in journal.terminals.values()] == ["cancelled", "skipped"]


class AskAlways:
    def begin_shutdown(self) -> None:
        """Nothing to keep pending."""

    async def authorize(self, call: CallUnderReview) -> Verdict:
        return Verdict.ask("nobody to ask")


async def test_an_unresolved_ask_is_a_denial():
    script = """
runs:
  - match: go
    steps:
      - tool_calls: [{name: current_time, arguments: {}}]
      - {text: ok}
"""
    journal = MemoryJournal()
    await _run(_core(script, authorizer=AskAlways()), journal)
    (terminal,) = journal.terminals.values()
    assert terminal.status == "denied" and "approval required and not given" in terminal.model_text


class FakeSource:
    def __init__(self, *tools: Any) -> None:
        self.tools = list(tools)

    def tools_for(self, conversation_key: str) -> list:
        return self.tools if conversation_key == "p_c" else []


def test_the_registry_adds_source_tools_per_conversation_and_refuses_a_taken_name():
    registry = ToolRegistry(builtin_tools(SystemClock().now))
    extra = Boom()
    extra.name = "remote_boom"
    registry.add_source(FakeSource(extra))
    assert sorted(registry.tools_for("p_c")) == ["current_time", "remote_boom", "wait"]
    assert sorted(registry.tools_for("p_other")) == ["current_time", "wait"]
    clash = Boom()
    clash.name = "wait"
    registry.add_source(FakeSource(clash))
    with pytest.raises(ToolClash, match="profile 'default': two tools are named 'wait'"):
        registry.tools_for("p_c")
    with pytest.raises(ValueError, match="two built-in tools"):
        ToolRegistry([*builtin_tools(SystemClock().now), *builtin_tools(SystemClock().now)])


class LevelRecorder:
    """A provider with a catalog entry that records the thinking level of each request."""

    name, model = "recorder", "m"
    info = ModelInfo(
        "m", 1000, 100, False, (ThinkingLevel.OFF, ThinkingLevel.LOW, ThinkingLevel.HIGH)
    )

    def __init__(self) -> None:
        self.levels: list[ThinkingLevel] = []

    async def complete(self, request, on_event) -> ProviderResult:
        self.levels.append(request.thinking)
        return ProviderResult(text="ok")

    async def aclose(self) -> None:
        pass


async def test_an_unsupported_thinking_level_is_clamped_with_one_warning_per_conversation(caplog):
    provider = LevelRecorder()
    core = AgentCore(
        provider,
        ToolRegistry([]),
        ToolRuntime(AllowAll()),
        step_limit=4,
        clock=lambda: T,
        thinking=ThinkingLevel.MEDIUM,
    )
    for _ in range(2):
        await _run(core, MemoryJournal())
    journal = MemoryJournal()
    other = RunScope("p_other", "run_2", "alice", DetailMode.SUMMARY, journal, lambda *a: None)
    await core.run(other, [HistoryMessage(0, "user", "go", T)], journal, lambda *d: None)
    # MEDIUM is as far from LOW as from HIGH: the lower one wins.
    assert provider.levels == [ThinkingLevel.LOW] * 3
    warnings = [r.getMessage() for r in caplog.records if "thinking level" in r.getMessage()]
    assert len(warnings) == 2
    assert "p_c" in warnings[0] and "p_other" in warnings[1]


EMPTY_REPLIES = """
runs:
  - match: "^go quiet"
    steps:
      - {text: " \\n", thinking: "nothing to say"}
  - match: "^go check"
    steps:
      - text: "checking"
        tool_calls: [{name: current_time, arguments: {}}]
      - {text: ""}
  - match: "^now"
    steps:
      - {text: "answered"}
"""


async def test_an_empty_reply_is_not_stored_and_fails_a_run_that_replied_nothing():
    journal = MemoryJournal()
    outcome, _ = await _run(_core(EMPTY_REPLIES), journal, "go quiet")
    assert journal.messages == []
    assert outcome.state == "failed" and outcome.reason.startswith("empty reply")


async def test_an_empty_last_reply_after_a_visible_one_is_dropped_and_the_run_completes():
    journal = MemoryJournal()
    outcome, _ = await _run(_core(EMPTY_REPLIES), journal, "go check")
    assert [(m.role, m.text) for m in journal.messages if m.role != "tool"] == [
        ("assistant", "checking")
    ]
    assert outcome.state == "completed" and "empty" in outcome.reason


async def test_an_empty_reply_with_a_steer_waiting_goes_on_to_answer_the_steer():
    journal = MemoryJournal(steers=["now please"])
    outcome, _ = await _run(_core(EMPTY_REPLIES), journal, "go quiet")
    assert [(m.role, m.text) for m in journal.messages] == [
        ("user", "now please"),
        ("assistant", "answered"),
    ]
    assert outcome.state == "completed" and outcome.steps == 2
