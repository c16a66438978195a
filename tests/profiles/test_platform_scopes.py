"""A conversation's actor hands the factory its platform and signal, and closes that scope when
the conversation is deleted, its actor stopped or evicted; the next profile gets a new one."""

from __future__ import annotations

import pytest

from mind.agent.manager import ConversationManager
from mind.conversation.access import Viewer
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.events.bus import EventBus
from mind.profiles import scope
from mind.profiles.book import ProfileBook
from mind.profiles.declared import declared_profiles
from mind.profiles.factory import ProfileFactory
from mind.profiles.model import ConversationInfo, Profile
from mind.profiles.scope import PlatformRequestError
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store.database import Database
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode
from tobe.config import MindSettings, ProfilesSettings

ALICE = Viewer("alice")
SCRIPT = 'runs: [{match: ".*", steps: [{text: "noted"}]}]'


def _manager(
    database: Database, made: list[ConversationInfo], **settings: object
) -> ConversationManager:
    def factory(info: ConversationInfo, configured: Profile) -> None:
        made.append(info)

    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry([]),
        ToolRuntime(AllowAll()),
        step_limit=3,
    )
    book = ProfileBook(
        declared_profiles(ProfilesSettings()),
        "default",
        frozenset,
        ProfileFactory(factory, "tests:factory"),
    )
    return ConversationManager(
        database, core, MindSettings(**settings), bus=EventBus(), profiles=book
    )


async def _profile(manager: ConversationManager, key: str) -> None:
    async with manager.actors.holding(key) as actor:
        await actor.profile()


async def test_the_factory_gets_the_conversations_platform_whose_messages_join_it(
    database: Database,
) -> None:
    made: list[ConversationInfo] = []
    manager = _manager(database, made)
    await manager.conversations.create(ALICE, "p_code", "", [])
    await _profile(manager, "p_code")

    (info,) = made
    assert info.platform is not None and info.platform.key == "p_code"
    assert not info.signal.cancelled
    await info.platform.messages.send("From the profile.", idempotency_key="code:1")
    page = await manager.messages.history(ALICE, "p_code", 0, 100, DetailMode.SUMMARY)
    assert [(m.text, m.posted_by) for m in page.messages][-1] == ("From the profile.", "profile")


async def test_deleting_the_conversation_fires_the_signal_and_send_then_raises(
    database: Database,
) -> None:
    made: list[ConversationInfo] = []
    manager = _manager(database, made)
    await manager.conversations.create(ALICE, "p_gone", "", [])
    await _profile(manager, "p_gone")

    await manager.actors.forget("p_gone")

    (info,) = made
    assert (info.signal.cancelled, info.signal.reason) == (True, scope.DELETED)
    assert info.platform is not None
    with pytest.raises(PlatformRequestError) as raised:
        await info.platform.messages.send("too late", idempotency_key="late")
    assert raised.value.code == "CANCELLED"


async def test_eviction_and_stop_close_the_scope_and_the_next_profile_gets_a_new_one(
    database: Database,
) -> None:
    made: list[ConversationInfo] = []
    manager = _manager(database, made, max_actors=1)
    await manager.conversations.create(ALICE, "p_idle", "", [])
    await _profile(manager, "p_idle")
    await _profile(manager, "p_next")  # the idle p_idle makes room
    async with manager.actors.holding("p_idle") as actor:
        await actor.profile()
        await actor.stop("the Mind shut down")

    evicted, _next, stopped = made
    assert evicted.signal.reason == scope.EVICTED
    assert stopped.signal.reason == scope.STOPPED
    assert evicted.platform is not stopped.platform
