"""The decision stages see the conversation's scheduled actions and memory, and a plan's
dependencies are completed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from helpers.recorded_provider import RecordedProvider

from mind.actions import planner
from mind.actions.layer import DecisionLayer, Turn
from mind.events.action_views import PlanStepView, TriggerKind, TriggerView
from mind.memory import store as memory_store
from mind.scheduler import records as schedule_records
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from tobe.config import ActionsSettings, SchedulerSettings

NOW = datetime(2026, 9, 10, 7, 0, tzinfo=UTC)
KEY = "p_home"


class FixedClock:
    def now(self) -> datetime:
        return NOW


async def test_the_stages_see_the_scheduled_actions_and_the_memory(database: Database) -> None:
    def unit(tx: WriteTx) -> str:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))
        tx.session.flush()
        memory_store.write_entry(tx, KEY, "dentist", "Dr. Weiss, Tuesdays", run_id="run_0")
        return schedule_records.create_schedule(
            tx,
            conversation_key=KEY,
            owner="alice",
            audience=["alice"],
            title="Call mum",
            goal="Remind the owner to call mum",
            plan=(PlanStepView(1, "send_message", "remind"),),
            trigger=TriggerView(
                TriggerKind.AT, "Europe/Paris", at=datetime(2026, 9, 10, 8, 0, tzinfo=UTC)
            ),
            source="test",
            now=NOW,
        ).id

    schedule_id = await database.write(unit)
    provider = RecordedProvider({"tendencies": [], "pending": []})
    layer = DecisionLayer(
        provider,
        database,
        ActionsSettings(),
        SchedulerSettings(time_zone="Europe/Paris"),
        clock=FixedClock(),
    )

    await layer.decide(Turn(KEY, "alice", ["alice"], "run_1", "move my 10 o'clock", (), {}))

    (request,) = provider.requests
    seen = request.messages[-1].text
    assert (
        "Scheduled actions of this conversation:\n"
        f"- {schedule_id}: Call mum (goal: Remind the owner to call mum; active; at; "
        "next: 2026-09-10T10:00+02:00)"
    ) in seen
    assert "The conversation's memory:\n- dentist: Dr. Weiss, Tuesdays" in seen


def _step(order: int, after: list[int]) -> dict[str, Any]:
    return {"order": order, "action": "memory_read", "purpose": "", "after": after}


def test_a_plans_dependencies_are_completed_through_the_steps_between() -> None:
    plan = planner.completed([_step(3, [2]), _step(1, []), _step(2, [1]), _step(4, [1])])

    assert [(step.order, step.after) for step in plan] == [
        (1, ()),
        (2, (1,)),
        (3, (1, 2)),
        (4, (1,)),
    ]
