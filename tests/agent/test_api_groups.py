"""The Mind's API groups in process, each on its own: who may do what, and what it refuses.

The conversations' flows (send, queue, run, restart) are proven in
`tests/mind/test_conversation_store.py`; these prove each group's own checks.
"""

from __future__ import annotations

import pytest

from mind.actions.model import PendingChoice
from mind.agent.manager import ConversationManager
from mind.conversation.access import Viewer
from mind.conversation.limits import clamp
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.errors import InvalidInput, NotAllowed, NotFound, WrongState
from mind.events.bus import EventBus
from mind.memory.store import Memory
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store.database import Database
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode
from tobe.config import MindSettings

ALICE = Viewer("alice")
BOB = Viewer("bob")
CAROL = Viewer("carol")
SCRIPT = 'runs: [{match: ".*", steps: [{text: "noted"}]}]'


def _manager(database: Database) -> ConversationManager:
    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry([]),
        ToolRuntime(AllowAll()),
        step_limit=3,
    )
    return ConversationManager(database, core, MindSettings(), bus=EventBus())


async def test_conversations_refuse_members_outside_a_group_and_unknown_profiles(
    database: Database,
) -> None:
    conversations = _manager(database).conversations
    with pytest.raises(InvalidInput, match="only allowed in group conversations"):
        await conversations.create(ALICE, "p_x", "", ["bob"])
    with pytest.raises(InvalidInput):
        await conversations.create(ALICE, "p_x", "", [], profile="no-such-profile")
    made = await conversations.create(ALICE, "g_x", "team", ["bob"])
    assert made.key == "g_x"
    assert [view.key for view in await conversations.list(BOB, 0)] == ["g_x"]
    assert await conversations.list(CAROL, 0) == []


async def test_only_the_owner_sets_the_profile_and_a_stranger_is_told_it_does_not_exist(
    database: Database,
) -> None:
    conversations = _manager(database).conversations
    await conversations.create(ALICE, "g_p", "", ["bob"])
    with pytest.raises(NotAllowed):
        await conversations.set_active_hand(BOB, "g_p", "")
    with pytest.raises(NotFound):
        await conversations.set_active_hand(CAROL, "g_p", "")
    assert (await conversations.set_active_hand(ALICE, "g_p", "laptop")).active_hand == "laptop"


async def test_messages_are_read_only_by_those_who_see_the_conversation(
    database: Database,
) -> None:
    manager = _manager(database)
    await manager.conversations.create(ALICE, "p_m", "", [])
    with pytest.raises(NotFound):
        await manager.messages.send(CAROL, "p_m", "hi", "k1", False, DetailMode.SUMMARY)
    with pytest.raises(NotFound):
        await manager.messages.snapshot(CAROL, "p_m", 0, DetailMode.SUMMARY)
    with pytest.raises(InvalidInput, match="idempotency_key is required"):
        await manager.messages.send(ALICE, "p_m", "hi", "", False, DetailMode.SUMMARY)
    with pytest.raises(InvalidInput, match="posted_by is required"):
        await manager.messages.post("p_m", "hi", "k2", posted_by="")
    await manager.actors.shutdown()


async def test_runs_cancel_refuses_an_idle_conversation_and_compacting_an_unknown_one(
    database: Database,
) -> None:
    manager = _manager(database)
    await manager.conversations.create(ALICE, "p_r", "", [])
    with pytest.raises(WrongState, match="no active run"):
        await manager.runs.cancel(ALICE, "p_r")
    with pytest.raises(NotFound):
        await manager.runs.compact_for_operator("p_nobody")
    await manager.actors.shutdown()


async def test_members_see_the_memory_but_only_the_owner_deletes_from_it(
    database: Database,
) -> None:
    manager = _manager(database)
    await manager.conversations.create(ALICE, "g_mem", "", ["bob"])
    await Memory(database).write("g_mem", "coffee", "black", run_id="")
    listed = await manager.memory.list(BOB, "g_mem")
    assert [entry.key for entry in listed.entries] == ["coffee"]
    with pytest.raises(NotFound):
        await manager.memory.list(CAROL, "g_mem")
    with pytest.raises(NotAllowed):
        await manager.memory.delete(BOB, "g_mem", "coffee")
    assert await manager.memory.delete(ALICE, "g_mem", "coffee")
    assert not await manager.memory.delete(ALICE, "g_mem", "coffee")


async def test_actions_are_listed_for_members_only_and_decided_only_with_the_layer_on(
    database: Database,
) -> None:
    manager = _manager(database)
    await manager.conversations.create(ALICE, "g_act", "", ["bob"])
    assert await manager.actions.list(BOB, "g_act", include_ended=True) == ([], [])
    with pytest.raises(NotFound):
        await manager.actions.list(CAROL, "g_act", include_ended=False)
    with pytest.raises(InvalidInput, match="amendment"):
        await manager.actions.decide(ALICE, "act_1", PendingChoice.AMEND, "", "k1")
    with pytest.raises(WrongState, match="decision layer is not running"):
        await manager.actions.decide(ALICE, "act_1", PendingChoice.CONFIRM, "", "k1")


def test_a_page_limit_defaults_caps_and_refuses_a_negative_one() -> None:
    assert clamp(0, 50, 500) == 50
    assert clamp(900, 50, 500) == 500
    with pytest.raises(InvalidInput, match="cannot be negative"):
        clamp(-1, 50, 500)
