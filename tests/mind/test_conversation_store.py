"""The conversation manager on the store, in process: what each send, run and restart commits."""

from __future__ import annotations

import asyncio

import pytest
from helpers.settled_runs import runs_of, settled_runs
from sqlalchemy import select

from mind.agent.actor import ConversationActor
from mind.agent.actor_state import ChatInput
from mind.agent.actors import INTERRUPTED
from mind.agent.manager import ConversationManager
from mind.conversation import inputs, runs
from mind.conversation.access import Viewer
from mind.conversation.replies import ConfiguredReplies
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.errors import NotFound
from mind.events.bus import EventBus
from mind.scheduler.clock import SystemClock
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode
from mind.tools.builtin import builtin_tools
from tobe.config import MindSettings

SCRIPT = """
runs:
  - match: "^time"
    steps:
      - text: "Let me check."
        chunks: 2
        tool_calls: [{name: current_time, arguments: {timezone: "UTC"}}]
      - {expect: {last_role: tool, last_contains: '"utc"'}, text: "Done."}
  - match: "^pause"
    steps:
      - {delay: 30, text: "paused"}
  - match: "^steady"
    steps:
      - {delay: 0.5, text: "thinking it over"}
  - match: "^change of plan"
    steps:
      - {expect: {last_role: user, last_contains: "change of plan"}, text: "Understood."}
  - match: "^later"
    steps:
      - {text: "later answered"}
"""
ALICE = Viewer("alice")


def _core() -> AgentCore:
    return AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry(builtin_tools(SystemClock().now)),
        ToolRuntime(AllowAll()),
        step_limit=10,
    )


def _manager(database: Database, bus: EventBus) -> ConversationManager:
    return ConversationManager(database, _core(), MindSettings(), bus=bus)


async def _runs(database: Database, key: str) -> list[tuple[str, str]]:
    return [(run.state, run.trigger) for run in await runs_of(database, key)]


async def _settled(database: Database, key: str, count: int) -> list[tuple[str, str]]:
    return [(run.state, run.trigger) for run in await settled_runs(database, key, count)]


async def test_a_send_runs_a_tool_turn_and_commits_each_step_with_its_events(
    database: Database, database_events: list[models.OutboxEvent]
) -> None:
    bus = EventBus()
    deltas = bus.subscribe(include_ephemeral=True)
    manager = _manager(database, bus)
    await manager.conversations.create(ALICE, "p_time", "", [])
    sent = await manager.messages.send(
        ALICE, "p_time", "time please", "k1", False, DetailMode.TRANSPARENT
    )
    assert sent.run_id and not sent.queued and not sent.duplicate
    assert await _settled(database, "p_time", 1) == [("completed", "user")]
    again = await manager.messages.send(
        ALICE, "p_time", "time please", "k1", False, DetailMode.TRANSPARENT
    )
    assert (again.input_id, again.run_id, again.duplicate) == (sent.input_id, sent.run_id, True)

    snapshot = await manager.messages.snapshot(ALICE, "p_time", 0, DetailMode.TRANSPARENT)
    assert [m.role for m in snapshot.messages] == ["user", "assistant", "tool", "assistant"]
    assert [t.status for t in snapshot.tools] == ["succeeded"]
    assert snapshot.active_run is None and snapshot.queued == ()
    assert snapshot.last_event_id == database_events[-1].id
    assert [e.type for e in database_events] == [
        "conversation_created",
        "run_changed",
        "message_appended",
        "message_appended",
        "tool_changed",
        "tool_changed",
        "message_appended",
        "message_appended",
        "run_changed",
    ]
    assert [e.id for e in database_events] == list(range(1, len(database_events) + 1))
    assert any(event.kind == "text_delta" for _, event in deltas.take_ephemeral())
    await manager.actors.shutdown()


async def test_sends_during_a_run_queue_and_a_restart_drains_the_queue(
    database: Database,
) -> None:
    first = _manager(database, EventBus())
    await first.conversations.create(ALICE, "p_q", "", [])
    started = await first.messages.send(ALICE, "p_q", "pause", "k1", False, DetailMode.SUMMARY)
    queued = await first.messages.send(ALICE, "p_q", "later", "k2", False, DetailMode.SUMMARY)
    assert started.run_id and not started.queued
    assert queued.queued and queued.run_id == ""
    snapshot = await first.messages.snapshot(ALICE, "p_q", 0, DetailMode.SUMMARY)
    assert snapshot.active_run is not None and snapshot.active_run.id == started.run_id
    assert [q.input_id for q in snapshot.queued] == [queued.input_id]
    await first.actors.shutdown()
    assert await _runs(database, "p_q") == [("interrupted", "user")]

    second = _manager(database, EventBus())
    await second.actors.recover()
    assert await _settled(database, "p_q", 2) == [
        ("interrupted", "user"),
        ("completed", "followup"),
    ]
    history = await second.messages.history(ALICE, "p_q", 0, 0, DetailMode.TRANSPARENT)
    assert [(m.role, m.text) for m in history.messages] == [
        ("user", "pause"),
        ("user", "later"),
        ("assistant", "later answered"),
    ]
    await second.actors.shutdown()


async def test_recovery_interrupts_the_runs_a_crash_left_running(database: Database) -> None:
    manager = _manager(database, EventBus())
    await manager.conversations.create(ALICE, "p_r", "", [])

    def crashed_mid_run(tx: WriteTx) -> str:
        run = runs.start(tx, key="p_r", trigger="user", mode="summary", audience=["alice"])
        row = inputs.accept(
            tx,
            key="p_r",
            principal="alice",
            text="pause",
            idempotency_key="k1",
            steer=False,
            mode="summary",
        )
        inputs.deliver(tx, row, run.id, ["alice"])
        return run.id

    run_id = await database.write(crashed_mid_run)
    await manager.actors.recover()
    assert await _runs(database, "p_r") == [("interrupted", "user")]
    reason = await database.read(
        lambda session: session.scalar(select(models.Run.reason).where(models.Run.id == run_id))
    )
    assert reason == INTERRUPTED
    await manager.actors.shutdown()


async def test_a_steering_message_joins_the_active_run_at_its_next_step(
    database: Database,
) -> None:
    manager = _manager(database, EventBus())
    await manager.conversations.create(ALICE, "p_s", "", [])
    started = await manager.messages.send(ALICE, "p_s", "steady", "k1", False, DetailMode.SUMMARY)
    steer = await manager.messages.send(
        ALICE, "p_s", "change of plan", "k2", True, DetailMode.SUMMARY
    )
    assert steer.queued and steer.run_id == started.run_id
    assert await _settled(database, "p_s", 1) == [("completed", "user")]
    history = await manager.messages.history(ALICE, "p_s", 0, 0, DetailMode.TRANSPARENT)
    assert [(m.role, m.text) for m in history.messages] == [
        ("user", "steady"),
        ("assistant", "thinking it over"),
        ("user", "change of plan"),
        ("assistant", "Understood."),
    ]
    await manager.actors.shutdown()


async def test_cancel_ends_the_active_run_and_the_next_send_starts_a_new_one(
    database: Database,
) -> None:
    manager = _manager(database, EventBus())
    await manager.conversations.create(ALICE, "p_c", "", [])
    first = await manager.messages.send(ALICE, "p_c", "pause", "k1", False, DetailMode.SUMMARY)
    assert await manager.runs.cancel(ALICE, "p_c") == first.run_id
    second = await manager.messages.send(ALICE, "p_c", "later", "k2", False, DetailMode.SUMMARY)
    assert second.run_id and second.run_id != first.run_id and not second.queued
    assert await _settled(database, "p_c", 2) == [("cancelled", "user"), ("completed", "user")]
    await manager.actors.shutdown()


async def test_a_send_whose_caller_went_away_still_starts_its_committed_run(
    database: Database,
) -> None:
    manager = _manager(database, EventBus())
    await manager.conversations.create(ALICE, "p_g", "", [])
    actor = ConversationActor(
        "p_g", ["alice"], database, _core(), bus=EventBus(), replies=ConfiguredReplies()
    )
    chat = ChatInput("alice", "later", "k1", False, "summary")
    send = asyncio.create_task(actor.submit(chat))
    await asyncio.sleep(0)  # the send is under way
    send.cancel()
    assert await _settled(database, "p_g", 1) == [("completed", "user")]
    retried = await actor.submit(chat)
    assert retried.duplicate and retried.run_id
    await actor.stop("test over")


async def test_the_mind_posts_through_the_manager_with_its_own_poster_name(
    database: Database,
) -> None:
    manager = ConversationManager(
        database,
        _core(),
        MindSettings(),
        bus=EventBus(),
        replies=ConfiguredReplies(welcome_text="Hi from the profile."),
    )
    await manager.conversations.create(ALICE, "p_p", "", [])
    posted = await manager.messages.post(
        "p_p", "Time to stretch.", "stretch-1", posted_by="schedule"
    )
    assert not posted.queued and posted.message_id
    again = await manager.messages.post(
        "p_p", "Time to stretch.", "stretch-1", posted_by="schedule"
    )
    assert again.duplicate and again.message_id == posted.message_id
    snapshot = await manager.messages.snapshot(ALICE, "p_p", 0, DetailMode.TRANSPARENT)
    assert [(m.text, m.posted_by, m.run_id) for m in snapshot.messages] == [
        ("Hi from the profile.", "welcome", ""),
        ("Time to stretch.", "schedule", ""),
    ]
    with pytest.raises(NotFound):
        await manager.messages.post("p_nobody", "hello", "k", posted_by="schedule")
    await manager.actors.shutdown()
