"""Profile code reads a dataset the person authorised from inside its own tool: the Hand's
sensitive tool runs as a call of the sealed run, its value reaches the code, and once the turn
ends it is replaced like the model's own sensitive calls; outside an active sealed run, or for
a dataset no tool reads, the read is refused with only a code."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from helpers.eventually import eventually_async
from helpers.sensitive_tool import SleepLog
from sqlalchemy import select

from mind.agent.manager import ConversationManager
from mind.conversation.access import Viewer
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.events.bus import EventBus
from mind.profiles.book import ProfileBook
from mind.profiles.declared import declared_profiles
from mind.profiles.factory import ProfileFactory
from mind.profiles.model import ConversationInfo, Profile
from mind.profiles.scope import PlatformRequestError
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store import models
from mind.store.database import Database
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode, Effect, Tool, ToolContext, ToolOutcome
from tobe.config import MindSettings, ProfilesSettings

ALICE = Viewer("alice")
HOURS = "HOURS-SLEPT-6-42"
SCRIPT = f"""
runs:
  - match: "^again"
    steps: [{{expect: {{request_excludes: ["{HOURS}"]}}, text: "ok"}}]
  - match: ".*"
    steps:
      - tool_calls: [{{name: sleep_coach, arguments: {{}}}}]
      - {{expect: {{last_role: tool, last_contains: "coached"}}, text: "Sleep well."}}
"""


class SleepCoach:
    """The profile's own tool: reads the dataset through its platform, keeps what it read."""

    name = "sleep_coach"
    description = "Coach the person on their sleep."
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    effect = Effect.READ_ONLY
    hand_id = ""

    def __init__(self, info: ConversationInfo, seen: list[object]) -> None:
        self.info, self.seen = info, seen

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        assert self.info.platform is not None
        data = self.info.platform.data
        read = await data.query("health.sleep", {"night": "last"}, context=context)
        self.seen.append(read)
        for dataset in ("health.steps",):
            try:
                await data.query(dataset, context=context)
            except PlatformRequestError as refused:
                self.seen.append(refused.code)
        return ToolOutcome(ok=True, output="coached")


def _manager(
    database: Database, seen: list[object], infos: list[ConversationInfo]
) -> ConversationManager:
    def factory(info: ConversationInfo, configured: Profile) -> Profile:
        infos.append(info)
        return replace(configured, tools=(SleepCoach(info, seen),))

    tools: list[Tool] = [SleepLog(HOURS)]
    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry(tools),
        ToolRuntime(AllowAll()),
        step_limit=5,
    )
    book = ProfileBook(
        declared_profiles(ProfilesSettings()),
        "default",
        frozenset,
        ProfileFactory(factory, "tests:factory"),
    )
    return ConversationManager(database, core, MindSettings(), bus=EventBus(), profiles=book)


async def test_profile_code_reads_a_dataset_in_the_sealed_run_and_the_turn_replaces_it(
    database: Database,
) -> None:
    seen: list[object] = []
    infos: list[ConversationInfo] = []
    manager = _manager(database, seen, infos)
    await manager.conversations.create(ALICE, "p_sleep", "", [])
    ended = await _turn(manager, "how did I sleep?")
    sent_run = ended.id

    read, missing = seen
    assert read.ok and HOURS in read.text
    assert missing == "NOT_FOUND"
    # The read was a call of the run: counted among what the turn queried, then replaced.
    assert ended.redaction == [{"dataset": "health.sleep", "status": "succeeded"}]
    messages = await database.read(lambda s: list(s.scalars(select(models.Message))))
    assert not any(HOURS in m.text or HOURS in json.dumps(m.payload) for m in messages)
    snapshot = await manager.messages.snapshot(ALICE, "p_sleep", 0, DetailMode.TRANSPARENT)
    assert snapshot.messages[-1].text == "Sleep well."
    # The next turn's request renders the code's call nowhere (the script fails it otherwise).
    await _turn(manager, "again")

    # Outside a run (the context names one that ended), nothing is read.
    (info,) = infos[-1:]
    assert info.platform is not None
    stale = ToolContext("p_sleep", sent_run, "call_x", "alice", DetailMode.SUMMARY, _quiet)
    with pytest.raises(PlatformRequestError) as refused:
        await info.platform.data.query("health.sleep", context=stale)
    assert refused.value.code == "FAILED_PRECONDITION"
    await manager.actors.shutdown()


async def _turn(manager: ConversationManager, text: str) -> models.Run:
    sent = await manager.messages.send(ALICE, "p_sleep", text, text, False, DetailMode.TRANSPARENT)

    async def run() -> models.Run | None:
        return await manager.database.read(lambda s: s.get(models.Run, sent.run_id))

    ended = await eventually_async(
        run, 10, until=lambda r: r is not None and r.state != "running", what="the run to end"
    )
    assert ended is not None and ended.state == "completed", ended and ended.reason
    return ended


def _quiet(_message: str, _fraction: float | None) -> None:
    return None
