"""The actor's queue and submit part: how an input's source decides the run it starts, and
what the note of a non-person input carries."""

from __future__ import annotations

from helpers.eventually import eventually_async
from sqlalchemy import select

from mind.agent.manager import ConversationManager
from mind.conversation.access import Viewer
from mind.conversation.sources import ObservationSource
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.events.bus import EventBus
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store import models
from mind.store.database import Database
from mind.tools.authorizer import AllowAll
from tobe.config import MindSettings

ALICE = Viewer("alice")
SCRIPT = 'runs: [{match: ".*", steps: [{text: "noted"}]}]'
OBSERVATION = ObservationSource(
    trust="medium",
    permissions={"workspace_write": False},
    adapters=("email",),
    instances=("email@work",),
    source_titles=("INBOX",),
    observation_ids=("o1",),
    publish_seq=4,
)


def _manager(database: Database) -> ConversationManager:
    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry([]),
        ToolRuntime(AllowAll()),
        step_limit=3,
    )
    return ConversationManager(database, core, MindSettings(), bus=EventBus())


async def _settled_run(database: Database, key: str) -> models.Run:
    async def runs() -> list[models.Run]:
        return await database.read(
            lambda session: list(
                session.scalars(select(models.Run).where(models.Run.conversation_key == key))
            )
        )

    found = await eventually_async(
        runs,
        10,
        until=lambda rows: len(rows) == 1 and rows[0].state != "running",
        what=f"the settled run of {key}",
    )
    return found[0]


async def test_an_observation_starts_a_run_triggered_by_its_trust_with_its_permissions_and_origin(
    database: Database,
) -> None:
    manager = _manager(database)
    await manager.conversations.create(ALICE, "p_obs", "", [])
    sent = await manager.messages.deliver_observation(
        "p_obs", "a mail arrived", "observation:o1", False, OBSERVATION, images=()
    )
    run = await _settled_run(database, "p_obs")
    assert (run.id, run.state, run.trigger) == (sent.run_id, "completed", "observation:medium")
    assert run.permissions == {"workspace_write": False}
    assert run.origin == "a medium-trust observation from email@work (INBOX)"
    await manager.actors.shutdown()


async def test_an_observation_is_delivered_as_a_note_carrying_its_source_as_stored(
    database: Database,
) -> None:
    manager = _manager(database)
    await manager.conversations.create(ALICE, "p_note", "", [])
    sent = await manager.messages.deliver_observation(
        "p_note", "a mail arrived", "observation:o1", False, OBSERVATION, images=()
    )
    await _settled_run(database, "p_note")
    message = await database.read(lambda session: session.get(models.Message, sent.message_id))
    assert message is not None and message.role == "note"
    assert message.payload["source"] == {
        "kind": "observation",
        "trust": "medium",
        "permissions": {"workspace_write": False},
        "adapters": ["email"],
        "instances": ["email@work"],
        "source_titles": ["INBOX"],
        "observation_ids": ["o1"],
        "publish_seq": 4,
    }
    await manager.actors.shutdown()
