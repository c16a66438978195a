"""Sealed turns in process, on both backends: what a sensitive turn stores, and what reads it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from helpers.eventually import eventually_async
from helpers.sensitive_tool import SleepLog
from sqlalchemy import select

from mind.agent.manager import ConversationManager
from mind.conversation.access import Viewer
from mind.conversation.history import HistoryMessage
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import Admission, RunScope, Terminal, ToolRuntime
from mind.events.bus import EventBus
from mind.providers.base import ToolCall
from mind.scheduler.clock import SystemClock
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.sealing.forms import Sealer, open_event, open_message
from mind.sealing.keyring import KeyRing, Queried
from mind.store import models
from mind.store.database import Database
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode, Tool
from mind.tools.builtin import builtin_tools
from tobe.config import MindSettings

ALICE = Viewer("alice")
_NOW = datetime(2026, 12, 3, tzinfo=UTC)
ARGUMENT = "NIGHT-ARG-4412"
RESULT = "RESULT-VALUE-9931"
THINKING = "THINKING-OWL-7731"
REPLY = "REPLY-VISIBLE-5150"
# How `current_time`'s result reads in the rows as `_stored` writes them out.
UTC_RESULT = '\\"utc\\"'
REPLACEMENT = "[sensitive data removed after the turn: health.sleep (succeeded)]"

SCRIPT = f"""
runs:
  - match: "^sleep report"
    steps:
      - thinking: "{THINKING} considers the night"
        text: "Let me look."
        tool_calls: [{{name: sleep_log, arguments: {{night: "{ARGUMENT}"}}}}]
      - expect: {{last_role: tool, last_contains: "{RESULT}"}}
        text: "{REPLY}: you slept well."
  - match: "^later"
    steps:
      - expect:
          request_contains: ["{REPLACEMENT}", "{REPLY}"]
          request_excludes: ["{ARGUMENT}", "{RESULT}", "{THINKING}"]
        text: "later answered"
  - match: "^time"
    steps:
      - thinking: "the clock"
        tool_calls: [{{name: current_time, arguments: {{timezone: "UTC"}}}}]
      - {{expect: {{last_role: tool, last_contains: '"utc"'}}, text: "Done."}}
"""


def _manager(database: Database, *, sensitive: bool) -> ConversationManager:
    tools: list[Tool] = (
        [*builtin_tools(SystemClock().now), SleepLog(RESULT)]
        if sensitive
        else builtin_tools(SystemClock().now)
    )
    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry(tools),
        ToolRuntime(AllowAll()),
        step_limit=10,
    )
    return ConversationManager(database, core, MindSettings(), bus=EventBus())


async def _turn(manager: ConversationManager, key: str, text: str, idem: str) -> models.Run:
    sent = await manager.messages.send(ALICE, key, text, idem, False, DetailMode.TRANSPARENT)

    async def run() -> models.Run | None:
        return await manager.database.read(lambda s: s.get(models.Run, sent.run_id))

    found = await eventually_async(
        run, 10, until=lambda r: r is not None and r.state != "running", what="the run to end"
    )
    assert found is not None and found.state == "completed", found and found.reason
    return found


async def _stored(database: Database) -> str:
    """Every row that may hold a turn's values, as one text."""

    def read(session: Any) -> str:
        rows: list[Any] = []
        for model in (models.Message, models.ToolProjection, models.OutboxEvent, models.Run):
            rows.extend(session.scalars(select(model)))
        return "\n".join(
            json.dumps({c.key: getattr(r, c.key) for c in r.__table__.columns}, default=str)
            for r in rows
        )

    return await database.read(read)


async def test_a_sensitive_turn_reads_as_its_replacement_once_it_ended(
    database: Database,
) -> None:
    manager = _manager(database, sensitive=True)
    await manager.conversations.create(ALICE, "p_health", "", [])
    run = await _turn(manager, "p_health", "sleep report", "k1")
    assert run.sealed == {"sleep_log": "health.sleep"}
    assert run.redaction == [{"dataset": "health.sleep", "status": "succeeded"}]
    keys = await database.read(lambda s: list(s.scalars(select(models.TurnKey))))
    assert keys == []

    stored = await _stored(database)
    for raw in (ARGUMENT, RESULT, THINKING):
        assert raw not in stored
    assert REPLY in stored

    snapshot = await manager.messages.snapshot(ALICE, "p_health", 0, DetailMode.TRANSPARENT)
    user, asked, result, reply = snapshot.messages
    assert (asked.text, asked.thinking, asked.redacted) == ("Let me look.", "", True)
    assert [call.name for call in asked.tool_calls] == ["sleep_log"]
    assert (result.text, result.redacted) == (REPLACEMENT, True)
    assert REPLY in reply.text and not reply.redacted and not user.redacted
    (tool,) = snapshot.tools
    assert (tool.arguments_json, tool.result_text, tool.status) == ("", "", "succeeded")

    # A later turn's provider request carries the replacement and none of the values (the
    # script's expectation fails the run otherwise).
    await _turn(manager, "p_health", "later", "k2")
    await manager.actors.shutdown()


async def test_a_turn_that_cannot_call_a_sensitive_tool_is_not_sealed(database: Database) -> None:
    manager = _manager(database, sensitive=False)
    await manager.conversations.create(ALICE, "p_plain", "", [])
    run = await _turn(manager, "p_plain", "time please", "k1")
    assert run.sealed is None and run.redaction is None
    assert await database.read(lambda s: list(s.scalars(select(models.TurnKey)))) == []
    assert UTC_RESULT in await _stored(database)  # stored as it is
    await manager.actors.shutdown()


async def test_a_sealed_turn_without_a_sensitive_call_keeps_its_key_and_its_values(
    database: Database,
) -> None:
    manager = _manager(database, sensitive=True)
    await manager.conversations.create(ALICE, "p_clock", "", [])
    run = await _turn(manager, "p_clock", "time please", "k1")
    assert run.sealed == {"sleep_log": "health.sleep"} and run.redaction is None
    keys = await database.read(lambda s: list(s.scalars(select(models.TurnKey))))
    assert [key.run_id for key in keys] == [run.id]
    assert UTC_RESULT not in await _stored(database)  # sealed in the store ...
    snapshot = await manager.messages.snapshot(ALICE, "p_clock", 0, DetailMode.TRANSPARENT)
    _user, asked, result, _reply = snapshot.messages
    assert '"utc"' in result.text and not result.redacted  # ... and readable with its key
    assert asked.thinking == "the clock" and not asked.redacted
    await manager.actors.shutdown()


def test_sealed_values_open_with_the_key_and_read_as_the_replacement_once_shredded() -> None:
    ring = KeyRing()
    key = bytes(range(32))
    ring.add("run_1", key)
    sealer = Sealer("run_1", key, {"sleep_log": "health.sleep"})
    payload = {
        "thinking": [{"text": THINKING}],
        "tool_calls": [{"id": "call_1", "name": "sleep_log", "arguments": {"night": ARGUMENT}}],
    }
    text, stored = sealer.tool_result(RESULT, {"tool_call_id": "call_1", "status": "succeeded"})
    assistant = sealer.assistant(payload)
    assert RESULT not in json.dumps(stored) + text
    assert ARGUMENT not in json.dumps(assistant) and THINKING not in json.dumps(assistant)

    class Row:
        def __init__(self, role: str, text: str, payload: dict[str, Any]) -> None:
            self.role, self.text, self.payload = role, text, payload

    opened = open_message(Row("tool", text, stored), ring)
    assert opened.text == RESULT and "redacted" not in opened.payload
    assert (
        open_message(Row("assistant", "", assistant), ring).payload["tool_calls"]
        == payload["tool_calls"]
    )
    event = sealer.event({"role": "tool", "text": text}, {"role": "tool", "text": RESULT})
    assert open_event("message_appended", event, ring)["text"] == RESULT

    ring.shred("run_1", [Queried("health.sleep", "succeeded")])
    gone = open_message(Row("tool", text, stored), ring)
    assert (gone.text, gone.payload["redacted"]) == (REPLACEMENT, True)
    noted = open_message(Row("assistant", "", assistant), ring).payload
    assert noted["thinking"] == [] and ARGUMENT not in json.dumps(noted)
    assert open_event("message_appended", event, ring) == {
        "role": "tool",
        "text": REPLACEMENT,
        "redacted": True,
    }


class _Journal:
    """Keeps the terminals a runtime records, in memory."""

    def __init__(self) -> None:
        self.terminals: list[Terminal] = []

    async def admit(self, admission: Admission) -> None:
        return None

    async def finish(self, terminal: Terminal) -> HistoryMessage:
        self.terminals.append(terminal)
        return HistoryMessage(id=1, role="tool", text=terminal.model_text, created_at=_NOW)

    async def skip(self, admission: Admission, terminal: Terminal) -> HistoryMessage:
        return await self.finish(terminal)


async def test_a_sensitive_tool_that_appeared_after_the_run_started_is_refused() -> None:
    journal = _Journal()
    scope = RunScope(
        conversation_key="p_health",
        run_id="run_1",
        principal="alice",
        detail_mode=DetailMode.SUMMARY,
        journal=journal,
        report_progress=lambda _call, _message, _fraction: None,
    )
    call = ToolCall(id="call_1", name="sleep_log", arguments={"night": ARGUMENT})
    await ToolRuntime(AllowAll()).execute(call, SleepLog(RESULT), scope)
    (terminal,) = journal.terminals
    assert terminal.status == "failed" and "from the next one" in terminal.model_text
    assert RESULT not in terminal.model_text  # it never ran
