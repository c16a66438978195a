"""Widget contents are the person's own data: a sealed (sensitive) turn that writes a widget
record has its tool calls' arguments and results replaced everywhere the turn is stored, but
the record it wrote stays as written (seed 004 §3.3.2: what code writes into widgets is not
replaced)."""

from __future__ import annotations

import json

from helpers.eventually import eventually_async
from helpers.sensitive_tool import SleepLog
from sqlalchemy import select
from trip_type import KEY

from mind.agent.manager import ConversationManager
from mind.conversation.access import Viewer
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.events.bus import EventBus
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store import models
from mind.store.database import Database
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode
from mind.widgets.tools import WIDGET_TOOLS, WidgetToolSource
from tobe.config import MindSettings

ALICE = Viewer("alice")
PLACE = "SLEPT-IN-BERGEN-4411"
SCRIPT = f"""
runs:
  - match: ".*"
    steps:
      - tool_calls: [{{name: sleep_log, arguments: {{night: "last"}}}}]
      - tool_calls: [{{name: widget_create, arguments: {{type: trip, title: "Nights"}}}}]
      - tool_calls:
          - name: widget_write
            arguments: {{module: stops, record_id: r1, data: {{place: "{PLACE}"}}}}
            arguments_from_last: {{widget_id: widget_id}}
      - text: "Written down."
"""


async def test_a_sealed_turn_replaces_its_tool_calls_but_not_the_widget_record_it_wrote(
    trip_store: Database,
) -> None:
    widget_tools = WidgetToolSource(trip_store)
    await widget_tools.start()
    registry = ToolRegistry([SleepLog()])
    registry.add_platform_source(widget_tools, WIDGET_TOOLS)
    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        registry,
        ToolRuntime(AllowAll()),
        step_limit=10,
    )
    manager = ConversationManager(trip_store, core, MindSettings(), bus=EventBus())
    sent = await manager.messages.send(
        ALICE, KEY, "note my night", "k1", False, DetailMode.TRANSPARENT
    )

    async def run() -> models.Run | None:
        return await trip_store.read(lambda s: s.get(models.Run, sent.run_id))

    ended = await eventually_async(
        run, 10, until=lambda r: r is not None and r.state != "running", what="the run to end"
    )
    await manager.actors.shutdown()

    assert ended is not None and ended.state == "completed", ended and ended.reason
    assert ended.sealed is not None and "sleep_log" in ended.sealed
    messages = await trip_store.read(lambda s: list(s.scalars(select(models.Message))))
    assert not any(PLACE in json.dumps(m.payload) or PLACE in m.text for m in messages)
    records = await trip_store.read(lambda s: list(s.scalars(select(models.WidgetRecord))))
    assert [(r.record_id, r.data) for r in records] == [("r1", {"place": PLACE})]
