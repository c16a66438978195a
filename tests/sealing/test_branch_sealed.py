"""A branch never holds a sealed turn's raw values, on both backends: it copies the turn only
as it reads once its key is gone, whether the origin's key was shredded or is still kept."""

from __future__ import annotations

from helpers.eventually import eventually_async
from helpers.sensitive_tool import SleepLog
from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.agent.manager import ConversationManager
from mind.conversation.access import Viewer
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.events.bus import EventBus
from mind.scheduler.clock import SystemClock
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.sealing.forms import SEALED
from mind.store import models
from mind.store.database import Database
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode
from mind.tools.builtin import builtin_tools
from tobe.config import MindSettings

ALICE = Viewer("alice")
RESULT = "RESULT-VALUE-9931"
REPLACEMENT = "[sensitive data removed after the turn: health.sleep (succeeded)]"
SCRIPT = """
runs:
  - match: "^sleep report"
    steps:
      - thinking: "the night"
        tool_calls: [{name: sleep_log, arguments: {night: "last"}}]
      - text: "You slept well."
  - match: "^time"
    steps:
      - thinking: "the clock"
        tool_calls: [{name: current_time, arguments: {timezone: "UTC"}}]
      - text: "Done."
"""


def _manager(database: Database) -> ConversationManager:
    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry([*builtin_tools(SystemClock().now), SleepLog(RESULT)]),
        ToolRuntime(AllowAll()),
        step_limit=10,
    )
    return ConversationManager(database, core, MindSettings(), bus=EventBus())


async def _turn(manager: ConversationManager, key: str, text: str) -> None:
    sent = await manager.messages.send(ALICE, key, text, text, False, DetailMode.TRANSPARENT)

    def taken(s: Session) -> models.Run | None:
        # A message queued behind the previous run's last steps has no run yet: the run that
        # takes it is recorded on its input.
        run_id = sent.run_id or s.get(models.Input, sent.input_id).run_id
        return s.get(models.Run, run_id) if run_id else None

    async def run() -> models.Run | None:
        return await manager.database.read(taken)

    found = await eventually_async(
        run, 10, until=lambda r: r is not None and r.state != "running", what="the run to end"
    )
    assert found is not None and found.state == "completed", found and found.reason


async def _payloads(database: Database, key: str) -> list[dict]:
    return await database.read(
        lambda s: [
            *s.scalars(
                select(models.Message.payload).where(models.Message.conversation_key == key)
            ),
            *s.scalars(
                select(models.ToolProjection.result_projection).where(
                    models.ToolProjection.conversation_key == key
                )
            ),
        ]
    )


async def test_a_branch_holds_a_sealed_turn_only_as_it_reads_without_its_key(
    database: Database,
) -> None:
    manager = _manager(database)
    await manager.conversations.create(ALICE, "p_origin", "", [])
    await _turn(manager, "p_origin", "sleep report")  # called its sensitive tool: shredded
    await _turn(manager, "p_origin", "time please")  # sealed, but keeps its key
    origin = await manager.messages.snapshot(ALICE, "p_origin", 0, DetailMode.TRANSPARENT)
    assert '"utc"' in origin.messages[-2].text  # readable in the origin

    view, copied = await manager.conversations.branch(ALICE, "p_origin", origin.messages[-1].id)

    assert copied == len(origin.messages) == 8
    assert not any(SEALED in payload for payload in await _payloads(database, view.key))
    branch = await manager.messages.snapshot(ALICE, view.key, 0, DetailMode.TRANSPARENT)
    results = [m for m in branch.messages if m.role == "tool"]
    assert [m.redacted for m in results] == [True, True]
    assert results[0].text == REPLACEMENT and '"utc"' not in results[1].text
    assert not any(m.thinking for m in branch.messages)
    assert [m.text for m in branch.messages if m.role != "tool"] == [
        m.text for m in origin.messages if m.role != "tool"
    ]
    # The origin is untouched: its kept key still opens its values.
    again = await manager.messages.snapshot(ALICE, "p_origin", 0, DetailMode.TRANSPARENT)
    assert '"utc"' in again.messages[-2].text
    await manager.actors.shutdown()
