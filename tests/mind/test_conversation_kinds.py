"""Conversation kinds in process: the Awareness sink makes "awareness" conversations, a person
makes "chat" ones, and listing filters by kind (unknown kinds refused, naming the kinds)."""

from __future__ import annotations

from typing import cast

import pytest

from mind.agent.manager import ConversationManager
from mind.awareness.client import AwarenessClient
from mind.awareness.images import NoteImages
from mind.awareness.notes import build_note
from mind.awareness.router import target_of
from mind.awareness.sink import ConversationSink
from mind.conversation.access import Viewer
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.errors import InvalidInput
from mind.events.bus import EventBus
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store.database import Database
from mind.tools.authorizer import AllowAll
from tobe.config import MindSettings
from tobe.v1 import awareness_pb2 as pb

ALICE = Viewer("alice")
SCRIPT = 'runs: [{match: ".*", steps: [{text: "noted"}]}]'


def _manager(database: Database) -> ConversationManager:
    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry([]),
        ToolRuntime(AllowAll()),
        step_limit=3,
    )
    return ConversationManager(database, core, MindSettings(), bus=EventBus())


async def test_awareness_makes_awareness_conversations_and_a_person_makes_chats(
    database: Database,
) -> None:
    manager = _manager(database)
    # A note without media never asks Awareness for an image.
    images = NoteImages(cast(AwarenessClient, None), max_bytes=1024, max_count=1)
    sink = ConversationSink(manager, images, default_key="p_awareness", owner="alice")
    try:
        await manager.conversations.create(ALICE, "p_mine", "mine", [])
        await sink.ensure_default()
        observation = pb.Observation(
            id="o1",
            adapter_name="email",
            instance="email@work",
            source_key="INBOX",
            source_title="Inbox",
            trust=pb.TRUST_LOW,
            content_json="{}",
        )
        key, title = target_of(observation, "p_awareness")
        delivered = await sink.deliver(build_note(key, 1, [observation], title=title))
        listed = await manager.conversations.list(ALICE, 10)
        chats = await manager.conversations.list(ALICE, 10, ["chat"])
        watched = await manager.conversations.list(ALICE, 10, ["awareness", "awareness"])
    finally:
        await manager.actors.shutdown()
    assert delivered == key and key.startswith("p_aw-")
    assert {(v.key, v.kind) for v in listed} == {
        ("p_mine", "chat"),
        ("p_awareness", "awareness"),
        (key, "awareness"),
    }
    assert [v.key for v in chats] == ["p_mine"]
    assert {v.key for v in watched} == {"p_awareness", key}


async def test_listing_an_unknown_kind_is_refused_naming_the_kinds(database: Database) -> None:
    manager = _manager(database)
    with pytest.raises(
        InvalidInput, match=r"unknown conversation kind 'mail'; the kinds are chat, awareness"
    ):
        await manager.conversations.list(ALICE, 10, ["chat", "mail"])
