"""A firing's proactive run interrupted by a crash or a stop, in process: the manager's recovery
runs it again (attempt n+1) and it posts once; after three attempts the firing ends failed and
the person is told. For each kind of time trigger (at, interval, cron)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from helpers.eventually import eventually_async
from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.agent import proactive
from mind.agent.manager import ConversationManager
from mind.conversation import inputs, runs
from mind.conversation.access import Viewer
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.events.action_views import PlanStepView, TriggerKind, TriggerView
from mind.events.bus import EventBus
from mind.scheduler import records
from mind.scheduler.clock import SystemClock
from mind.scheduler.model import FiringDelivery
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
  - match: "Scheduled action 'Stand-up'"
    steps:
      - {tool_calls: [{name: send_message, arguments: {text: "Stand-up in five minutes."}}]}
  - match: "Scheduled action 'Broken'"
    steps:
      - {error: "the model refused the request", error_kind: request}
  - match: "Scheduled action 'Slow'"
    steps:
      - {delay: 60, text: "never reached"}
"""
ALICE = Viewer("alice")
KEY = "p_team"
NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
TRIGGERS = {
    "at": TriggerView(TriggerKind.AT, "UTC", at=NOW + timedelta(hours=1)),
    "interval": TriggerView(TriggerKind.INTERVAL, "UTC", every_seconds=3600),
    "cron": TriggerView(TriggerKind.CRON, "Europe/Paris", cron="0 11 * * *"),
}


def _manager(database: Database) -> ConversationManager:
    core = AgentCore(
        ScriptedProvider(parse_script(SCRIPT, "test")),
        ToolRegistry(builtin_tools(SystemClock().now)),
        ToolRuntime(AllowAll()),
        step_limit=10,
    )
    return ConversationManager(database, core, MindSettings(), bus=EventBus())


async def _claimed(database: Database, title: str, trigger: TriggerView) -> FiringDelivery:
    """A new action of alice's in KEY, claimed at its first due time."""

    def unit(tx: WriteTx) -> FiringDelivery:
        view = records.create_schedule(
            tx,
            conversation_key=KEY,
            owner="alice",
            audience=["alice"],
            title=title,
            goal="remind the team",
            plan=(PlanStepView(1, "send_message", "remind"),),
            trigger=trigger,
            source="test",
            now=NOW,
        )
        assert view.next_fire_at is not None
        (firing,) = records.claim_due(tx, view.next_fire_at)
        return firing

    return await database.write(unit)


async def _crashed_mid_run(database: Database, firing: FiringDelivery) -> str:
    """What a kill -9 leaves of a firing's first attempt: its run started, never ended."""

    def unit(tx: WriteTx) -> str:
        run = runs.start(
            tx, key=KEY, trigger=runs.PROACTIVE_TRIGGER, mode="summary", audience=["alice"]
        )
        row = inputs.accept(
            tx,
            key=KEY,
            principal="alice",
            text=proactive.note_text(firing),
            idempotency_key=firing.idempotency_key,
            steer=False,
            mode="summary",
            source=proactive.source(firing),
        )
        inputs.deliver(tx, row, run.id, ["alice"])
        records.firing_started(tx, firing.firing_id, run.id)
        return run.id

    return await database.write(unit)


@dataclass(frozen=True)
class Stored:
    outcome: str
    attempts: int
    detail: str
    runs: list[str]  # each attempt's run state, in order
    posts: list[str]  # what was posted for the firing


async def _stored(database: Database, firing_id: int) -> Stored:
    def read(session: Session) -> Stored:
        row = session.get(models.Firing, firing_id)
        attempts = session.scalars(
            select(models.Input.run_id)
            .where(models.Input.idempotency_key.startswith(f"firing:{firing_id}"))
            .order_by(models.Input.id)
        )
        states = [
            session.scalar(select(models.Run.state).where(models.Run.id == run_id))
            for run_id in attempts
        ]
        posted = session.scalars(
            select(models.Message)
            .where(models.Message.conversation_key == KEY, models.Message.run_id.is_(None))
            .order_by(models.Message.id)
        )
        texts = [m.text for m in posted if m.payload.get("firing_id") == firing_id]
        return Stored(row.outcome, row.attempts, row.detail, states, texts)

    return await database.read(read)


async def _settled(database: Database, firing_id: int) -> Stored:
    return await eventually_async(
        lambda: _stored(database, firing_id),
        10,
        until=lambda found: found.outcome != "running",
        what=f"firing {firing_id} ended",
    )


async def _attempt_running(database: Database, firing_id: int, attempt: int) -> Stored:
    return await eventually_async(
        lambda: _stored(database, firing_id),
        10,
        until=lambda found: found.attempts == attempt and found.runs[-1:] == ["running"],
        what=f"attempt {attempt} of firing {firing_id} running",
    )


@pytest.mark.parametrize("kind", list(TRIGGERS))
async def test_a_firing_whose_run_a_crash_interrupted_runs_again_and_posts_once(
    database: Database, kind: str
) -> None:
    first = _manager(database)
    await first.conversations.create(ALICE, KEY, "", [])
    firing = await _claimed(database, "Stand-up", TRIGGERS[kind])
    await _crashed_mid_run(database, firing)

    second = _manager(database)
    await second.actors.recover()
    stored = await _settled(database, firing.firing_id)
    assert stored == Stored(
        "sent", 2, "", ["interrupted", "completed"], ["Stand-up in five minutes."]
    )

    # Delivered again by the scheduler after another restart: nothing more runs or posts.
    await second.messages.deliver_firing(firing)
    await second.actors.shutdown()
    third = _manager(database)
    await third.actors.recover()
    await third.messages.deliver_firing(firing)
    assert await _stored(database, firing.firing_id) == stored
    await third.actors.shutdown()


async def test_a_firing_interrupted_in_each_of_three_attempts_ends_failed_and_says_so(
    database: Database,
) -> None:
    manager = _manager(database)
    await manager.conversations.create(ALICE, KEY, "", [])
    firing = await _claimed(database, "Slow", TRIGGERS["interval"])
    await _crashed_mid_run(database, firing)

    # Attempts 2 and 3 are interrupted by a stop, which retries like a crash.
    for attempt in (2, 3):
        manager = _manager(database)
        await manager.actors.recover()
        await _attempt_running(database, firing.firing_id, attempt)
        await manager.actors.shutdown()

    manager = _manager(database)
    await manager.actors.recover()
    stored = await _stored(database, firing.firing_id)
    assert (stored.outcome, stored.attempts, stored.runs) == ("failed", 3, ["interrupted"] * 3)
    assert stored.detail.startswith("interrupted in each of its 3 attempts")
    assert stored.posts == [
        "Scheduled action 'Slow', due 2026-12-03 10:00 UTC, did not run: the Mind stopped "
        "during each of its 3 attempts, so nothing was sent for it."
    ]
    snapshot = await manager.messages.snapshot(ALICE, KEY, 0, DetailMode.SUMMARY)
    assert snapshot.active_run is None and snapshot.queued == ()
    await manager.actors.shutdown()


async def test_a_firing_counts_the_runs_it_started_and_is_open_until_it_ends(
    database: Database,
) -> None:
    await _manager(database).conversations.create(ALICE, KEY, "", [])
    firing = await _claimed(database, "Stand-up", TRIGGERS["interval"])

    def started(tx: WriteTx) -> tuple[int, str, bool]:
        records.firing_started(tx, firing.firing_id, "run_a")
        records.firing_started(tx, firing.firing_id, "run_b")
        row = tx.session.get(models.Firing, firing.firing_id)
        assert row is not None
        return row.attempts, row.run_id, records.firing_open(tx, firing.firing_id)

    assert await database.write(started) == (2, "run_b", True)

    def ended(tx: WriteTx) -> tuple[int, bool, object]:
        records.end_firing(tx, firing.firing_id, records.FiringOutcome.SENT, "")
        records.firing_started(tx, firing.firing_id, "run_c")
        row = tx.session.get(models.Firing, firing.firing_id)
        assert row is not None
        return (
            row.attempts,
            records.firing_open(tx, firing.firing_id),
            records.running_firing(tx, "run_b"),
        )

    assert await database.write(ended) == (2, False, None)


async def test_a_firing_whose_run_fails_ends_failed_and_tells_the_person_once(
    database: Database,
) -> None:
    manager = _manager(database)
    await manager.conversations.create(ALICE, KEY, "", [])
    firing = await _claimed(database, "Broken", TRIGGERS["interval"])

    await manager.messages.deliver_firing(firing)
    stored = await _settled(database, firing.firing_id)

    assert (stored.outcome, stored.attempts, stored.runs) == ("failed", 1, ["failed"])
    assert "the model refused the request" in stored.detail
    assert stored.posts == [
        f"Scheduled action 'Broken' did not run: {stored.detail}. Nothing was sent for it."
    ]
    # Delivered again after a restart: it neither runs nor tells again.
    await manager.actors.shutdown()
    again = _manager(database)
    await again.actors.recover()
    await again.messages.deliver_firing(firing)
    assert await _stored(database, firing.firing_id) == stored
    await again.actors.shutdown()
