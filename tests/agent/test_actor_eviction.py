"""Idle conversation actors are let go and loaded again on demand: memory stays bounded with
10,000 conversations, an evicted conversation goes on from its stored history, and an actor
that runs something or is held by a caller is never evicted. Before it is let go, an idle
actor forgets its cached context and its next run reads it again from the store."""

from __future__ import annotations

import time

import pytest
from helpers.eventually import eventually_async
from helpers.settled_runs import settled_runs

from mind.agent.actors import CONTEXT_KEPT_SHARE
from mind.agent.manager import ConversationManager
from mind.conversation.access import Viewer
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.events.bus import EventBus
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store.database import Database
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode
from tobe.config import MindSettings

ALICE = Viewer("alice")
SCRIPT = """
runs:
  - match: "^again"
    steps: [{expect: {request_contains: ["remember the blue door"]}, text: "the blue door"}]
  - match: "^slow"
    steps: [{delay: 1.0, text: "done slowly"}]
  - match: ".*"
    steps: [{text: "noted"}]
"""


def _manager(database: Database, **settings: object) -> ConversationManager:
    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry([]),
        ToolRuntime(AllowAll()),
        step_limit=3,
    )
    return ConversationManager(database, core, MindSettings(**settings), bus=EventBus())


async def _settled(database: Database, key: str, count: int) -> list[tuple[str, str]]:
    return [(run.state, run.reason) for run in await settled_runs(database, key, count)]


async def _send(manager: ConversationManager, key: str, text: str) -> None:
    await manager.messages.send(ALICE, key, text, f"{key}:{text}", False, DetailMode.SUMMARY)


@pytest.mark.parametrize("store_backend", ["sqlite"], indirect=True)
async def test_ten_thousand_conversations_keep_at_most_max_actors_in_memory(
    database: Database,
) -> None:
    # One backend: what is bounded is the Mind's memory, not the store's.
    manager = _manager(database, max_actors=50)
    most = 0
    for number in range(10_000):
        async with manager.actors.holding(f"p_{number}"):
            most = max(most, manager.actors.loaded)
    assert most == 50


async def test_an_evicted_conversation_is_loaded_again_and_goes_on_from_its_history(
    database: Database,
) -> None:
    manager = _manager(database, max_actors=1)
    await manager.conversations.create(ALICE, "p_a", "", [])
    await manager.conversations.create(ALICE, "p_b", "", [])
    await _send(manager, "p_a", "remember the blue door")
    await _settled(database, "p_a", 1)
    await _send(manager, "p_b", "hello")  # p_a's actor, idle, makes room
    await _settled(database, "p_b", 1)
    assert manager.actors.loaded == 1

    await _send(manager, "p_a", "again: what did I say?")

    assert await _settled(database, "p_a", 2) == [("completed", ""), ("completed", "")]
    snapshot = await manager.messages.snapshot(ALICE, "p_a", 0, DetailMode.SUMMARY)
    assert [m.text for m in snapshot.messages][-1] == "the blue door"


async def test_an_actor_idle_for_a_share_of_the_idle_time_forgets_its_context_and_reads_it_again(
    database: Database,
) -> None:
    idle_for = 600.0
    manager = _manager(database, actor_idle_seconds=idle_for)
    await manager.conversations.create(ALICE, "p_a", "", [])
    await _send(manager, "p_a", "remember the blue door")
    await _settled(database, "p_a", 1)
    async with manager.actors.holding("p_a") as actor:
        assert actor._transcript  # the context it ran with, kept for the next run

    # The pool's sweep as it runs later, unused for more than the share but less than the
    # whole idle time (called directly: the sweep reads the monotonic clock, not waited for).
    manager.actors._evict(time.monotonic() + idle_for * (CONTEXT_KEPT_SHARE + 1) / 2)

    async with manager.actors.holding("p_a") as kept:
        assert kept is actor and not actor._transcript
    await _send(manager, "p_a", "again: what did I say?")
    assert await _settled(database, "p_a", 2) == [("completed", ""), ("completed", "")]
    snapshot = await manager.messages.snapshot(ALICE, "p_a", 0, DetailMode.SUMMARY)
    assert [m.text for m in snapshot.messages][-1] == "the blue door"


async def test_an_actor_running_or_held_is_never_evicted(database: Database) -> None:
    manager = _manager(database, max_actors=1, actor_idle_seconds=0.001)
    await manager.conversations.create(ALICE, "p_slow", "", [])
    await _send(manager, "p_slow", "slow please")
    async with manager.actors.holding("p_held") as held:
        async with manager.actors.holding("p_other"):
            assert manager.actors.loaded == 3  # running, held, and taken: none may go
        await _settled(database, "p_slow", 1)
        # The finished and the released ones go; the held one stays, still usable.
        await eventually_async(
            lambda: _loaded_after_taking(manager, "p_late"),
            5,
            until=lambda n: n == 2,
            what="the finished and released actors let go",
        )
        async with manager.actors.holding("p_held") as again:
            assert again is held


async def test_an_actor_unused_for_the_idle_time_is_let_go(database: Database) -> None:
    manager = _manager(database, actor_idle_seconds=0.001)
    async with manager.actors.holding("p_first") as first:
        pass
    await eventually_async(
        lambda: _loaded_after_taking(manager, "p_second"),
        5,
        until=lambda n: n == 1,
        what="the unused actor let go",
    )
    async with manager.actors.holding("p_first") as again:
        assert again is not first


async def _loaded_after_taking(manager: ConversationManager, key: str) -> int:
    async with manager.actors.holding(key):
        return manager.actors.loaded
