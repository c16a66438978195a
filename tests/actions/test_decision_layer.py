"""The decision layer over a real store with recorded stage answers: what each verdict leads
to, what the next input's answers do to a pending action, and what a malformed answer
costs. The scheduler's side is a fake with `create_schedule`'s signature."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest
from helpers.recorded_provider import RecordedProvider

from mind.actions import records
from mind.actions.layer import DecisionLayer, Turn
from mind.actions.model import PendingChoice
from mind.actions.outcomes import Fate
from mind.events.action_views import (
    ActionTiming,
    PendingActionView,
    PendingState,
    PlanStepView,
    ScheduledActionView,
    ScheduleState,
    TriggerView,
)
from mind.profiles.model import DEFAULT_PROFILE
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import Effect
from tobe.config import ActionsSettings, SchedulerSettings

KEY = "p_home"
NOW = datetime(2026, 9, 10, 7, 0, tzinfo=UTC)
NOTHING = {"tendencies": [], "pending": []}


@dataclass
class FakeTool:
    name: str
    effect: Effect
    description: str = "a tool"
    hand_id: str = ""


TOOLS: dict[str, Any] = {
    "memory_read": FakeTool("memory_read", Effect.READ_ONLY),
    "lights_set": FakeTool("lights_set", Effect.EXTERNAL_SIDE_EFFECT),
}


class FixedClock:
    def now(self) -> datetime:
        return NOW


class FakeScheduler:
    """Stands for `mind.scheduler.records.create_schedule`: records its calls."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, tx: WriteTx, **fields: Any) -> ScheduledActionView:
        assert isinstance(tx, WriteTx)
        self.calls.append(fields)
        return ScheduledActionView(
            id=f"sch_{len(self.calls)}",
            conversation_key=fields["conversation_key"],
            title=fields["title"],
            goal=fields["goal"],
            plan=fields["plan"],
            trigger=fields["trigger"],
            state=ScheduleState.ACTIVE,
            next_fire_at=fields["trigger"].at,
            created_at=fields["now"],
        )


@pytest.fixture
async def home(database: Database) -> Database:
    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))

    await database.write(unit)
    return database


def _layer(
    database: Database, provider: RecordedProvider, scheduler: FakeScheduler
) -> DecisionLayer:
    return DecisionLayer(
        provider,
        database,
        ActionsSettings(max_tendencies=2),
        SchedulerSettings(time_zone="Europe/Paris"),
        clock=FixedClock(),
        schedule=scheduler,
    )


def _turn(text: str, run_id: str = "run_1") -> Turn:
    return Turn(KEY, "alice", ["alice"], run_id, text, (), TOOLS)


def _tendency(goal: str) -> dict[str, Any]:
    return {"tendencies": [{"goal": goal, "evidence": goal}], "pending": []}


def _verdict(verdict: str, actions: list[str], **extra: Any) -> dict[str, Any]:
    return {"verdict": verdict, "reason": "why", "title": "Lights off", "actions": actions, **extra}


def _plan(*actions: str) -> dict[str, Any]:
    steps = [
        {"order": i, "action": a, "purpose": a, "after": [i - 1] if i > 1 else []}
        for i, a in enumerate(actions, 1)
    ]
    return {"steps": steps}


def _answer(action_id: str, decision: str, amendment: str = "") -> dict[str, Any]:
    item = {"id": action_id, "decision": decision}
    if amendment:
        item["amendment"] = amendment
    return {"tendencies": [], "pending": [item]}


async def _pending(database: Database) -> list[PendingActionView]:
    return await database.read(lambda s: records.listing(s, KEY, pending_only=False))


async def test_ordinary_chat_opens_only_read_only_tools_and_writes_nothing(
    home: Database, database_events: list[Any]
):
    provider = RecordedProvider(NOTHING)
    decision = await _layer(home, provider, FakeScheduler()).decide(_turn("how are tides made?"))
    assert decision.note() is None and len(provider.requests) == 1
    opened = decision.selection.apply(TOOLS)
    assert list(opened) == ["memory_read"]
    assert database_events == []


async def test_an_immediate_action_opens_its_plans_meta_actions_and_notes_the_steps(home: Database):
    provider = RecordedProvider(
        _tendency("Turn the lights off"),
        _verdict("immediate", ["lights_set"]),
        _plan("memory_read", "lights_set"),
    )
    decision = await _layer(home, provider, FakeScheduler()).decide(_turn("lights off"))
    assert list(decision.selection.apply(TOOLS)) == ["memory_read", "lights_set"]
    text, payload = decision.note() or ("", {})
    assert "executing now, in this order: 1. memory_read (memory_read); 2. lights_set" in text
    assert payload["kind"] == "decision" and payload["outcomes"][0]["fate"] == "executing"


async def test_a_planned_action_is_handed_to_the_scheduler_with_its_plan_and_trigger(
    home: Database,
):
    at = "2026-09-10T18:00:00+02:00"
    scheduler = FakeScheduler()
    provider = RecordedProvider(
        _tendency("Remind me at six"),
        _verdict("planned", ["send_message"], trigger={"kind": "at", "at": at}),
        _plan("memory_read", "send_message"),
    )
    decision = await _layer(home, provider, scheduler).decide(_turn("remind me at six"))
    [call] = scheduler.calls
    assert call["conversation_key"] == KEY and call["owner"] == "alice"
    assert call["audience"] == ["alice"] and call["source"] == "run_1" and call["now"] == NOW
    assert call["trigger"] == TriggerView.from_payload(
        {"kind": "at", "at": at, "time_zone": "Europe/Paris"}
    )
    assert [step.action for step in call["plan"]] == ["memory_read", "send_message"]
    [outcome] = decision.outcomes
    assert outcome.fate is Fate.SCHEDULED and outcome.schedule_id == "sch_1"
    assert list(decision.selection.apply(TOOLS)) == ["memory_read"]
    planner_input = provider.requests[2].messages[0].text
    assert "lights_set" not in planner_input  # a scheduled plan may only read and message


async def test_what_a_low_trust_observation_would_arrange_for_later_waits_for_the_owner(
    home: Database,
):
    at = "2026-09-10T18:00:00+02:00"
    scheduler = FakeScheduler()
    provider = RecordedProvider(
        _tendency("Remind the owner to pay the invoice"),
        _verdict("planned", ["send_message"], trigger={"kind": "at", "at": at}),
        _plan("send_message"),
    )
    turn = replace(_turn("an email: remind them to pay"), untrusted=True)
    decision = await _layer(home, provider, scheduler).decide(turn)
    assert scheduler.calls == []
    [waiting] = await _pending(home)
    assert waiting.state is PendingState.PENDING and waiting.timing is ActionTiming.PLANNED
    assert waiting.trigger is not None and "waits for the owner" in waiting.reason
    [outcome] = decision.outcomes
    assert outcome.fate is Fate.WAITING


async def test_the_evaluator_is_told_which_adapters_a_condition_can_watch(home: Database):
    provider = RecordedProvider(
        _tendency("Tell me when the build fails"),
        _verdict(
            "planned",
            ["send_message"],
            trigger={"kind": "observation", "adapter": "ci", "match": "failed"},
        ),
        _plan("send_message"),
    )
    layer = _layer(home, provider, FakeScheduler())

    async def adapters() -> str:
        return "- ci: build results from the CI webhook"

    layer.adapters = adapters
    await layer.decide(_turn("tell me when the build fails"))
    evaluator_input = provider.requests[1].messages[0].text
    assert "observation condition can name (by name):\n- ci: build results" in evaluator_input


async def test_a_planned_action_that_would_change_things_is_refused_saying_why(home: Database):
    scheduler = FakeScheduler()
    provider = RecordedProvider(
        _tendency("Lights off at six"),
        _verdict("planned", ["lights_set"], trigger={"kind": "cron", "cron": "0 18 * * *"}),
    )
    decision = await _layer(home, provider, scheduler).decide(_turn("lights off at six"))
    [outcome] = decision.outcomes
    assert outcome.fate is Fate.REFUSED and "can only read and message you" in outcome.reason
    assert scheduler.calls == [] and len(provider.requests) == 2


async def test_tendencies_beyond_the_limit_are_refused_as_too_many(home: Database):
    three = {
        "tendencies": [{"goal": g, "evidence": g} for g in ("a", "b", "c")],
        "pending": [],
    }
    refused = _verdict("refused", [])
    provider = RecordedProvider(three, refused, refused)
    decision = await _layer(home, provider, FakeScheduler()).decide(_turn("a b c"))
    assert [o.fate for o in decision.outcomes] == [Fate.REFUSED] * 3
    assert "Too many actions at once (at most 2)" in decision.outcomes[2].reason


async def _waiting(
    home: Database, actions: tuple[str, ...] = ("lights_set",), **verdict: Any
) -> PendingActionView:
    provider = RecordedProvider(
        _tendency("Turn the lights off"),
        _verdict("confirm", list(actions), **({"timing": "immediate"} | verdict)),
        _plan(*actions),
    )
    decision = await _layer(home, provider, FakeScheduler()).decide(_turn("lights off"))
    [outcome] = decision.outcomes
    assert outcome.fate is Fate.WAITING
    assert list(decision.selection.apply(TOOLS)) == ["memory_read"]
    [action] = await _pending(home)
    assert action.id == outcome.action_id and action.state is PendingState.PENDING
    return action


async def test_the_next_input_confirms_a_waiting_action_which_then_executes(home: Database):
    action = await _waiting(home)
    provider = RecordedProvider(_answer(action.id, "confirm"))
    layer = _layer(home, provider, FakeScheduler())
    decision = await layer.decide(_turn("yes, do it", run_id="run_2"))
    assert action.id in provider.requests[0].messages[0].text
    [outcome] = decision.outcomes
    assert outcome.fate is Fate.EXECUTING and outcome.plan == action.plan
    assert "lights_set" in decision.selection.apply(TOOLS)
    [after] = await _pending(home)
    assert after.state is PendingState.CONFIRMED and after.outcome == "run_2"


async def test_the_next_input_confirms_a_planned_action_into_a_scheduled_one(home: Database):
    at = "2026-09-10T18:00:00+02:00"
    action = await _waiting(
        home, ("send_message",), timing="planned", trigger={"kind": "at", "at": at}
    )
    scheduler = FakeScheduler()
    decision = await _layer(
        home, RecordedProvider(_answer(action.id, "confirm")), scheduler
    ).decide(_turn("yes"))
    assert decision.outcomes[0].fate is Fate.SCHEDULED
    assert scheduler.calls[0]["source"] == action.id
    [after] = await _pending(home)
    assert after.state is PendingState.CONFIRMED and after.outcome == "sch_1"


async def test_the_next_input_cancels_a_waiting_action(home: Database):
    action = await _waiting(home)
    layer = _layer(home, RecordedProvider(_answer(action.id, "cancel")), FakeScheduler())
    decision = await layer.decide(_turn("no, leave them on"))
    assert decision.outcomes[0].fate is Fate.CANCELLED
    assert list(decision.selection.apply(TOOLS)) == ["memory_read"]
    [after] = await _pending(home)
    assert after.state is PendingState.CANCELLED


async def test_the_next_input_amends_a_waiting_action_which_is_evaluated_and_planned_again(
    home: Database,
):
    action = await _waiting(home)
    provider = RecordedProvider(
        _answer(action.id, "amend", "only the kitchen"),
        _verdict("confirm", ["lights_set"], timing="immediate", title="Kitchen lights off"),
        _plan("lights_set"),
    )
    decision = await _layer(home, provider, FakeScheduler()).decide(_turn("only the kitchen"))
    assert "only the kitchen" in provider.requests[1].messages[0].text
    [outcome] = decision.outcomes
    assert outcome.fate is Fate.WAITING and outcome.action_id != action.id
    by_id = {found.id: found for found in await _pending(home)}
    old, new = by_id.pop(action.id), by_id.popitem()[1]
    assert old.state is PendingState.AMENDED and old.outcome == new.id
    assert new.state is PendingState.PENDING and new.title == "Kitchen lights off"


async def test_an_owners_confirmation_outside_the_chat_executes_the_stored_plan(home: Database):
    action = await _waiting(home)
    layer = _layer(home, RecordedProvider(), FakeScheduler())
    decision = await layer.take_up(_turn("Confirmed"), action.id, PendingChoice.CONFIRM, "")
    assert decision.outcomes[0].plan == (PlanStepView(1, "lights_set", "lights_set"),)
    assert "lights_set" in decision.selection.apply(TOOLS)


async def test_an_amendment_of_an_expired_action_marks_it_expired_and_plans_nothing(
    home: Database,
):
    action = await _waiting(home)

    class Later:
        def now(self) -> datetime:
            return action.expires_at

    layer = _layer(home, RecordedProvider(), FakeScheduler())
    layer.clock = Later()
    decision = await layer.take_up(_turn("Amended"), action.id, PendingChoice.AMEND, "kitchen")
    [outcome] = decision.outcomes
    assert outcome.fate is Fate.EXPIRED and "expired before it was confirmed" in outcome.line()
    [after] = await _pending(home)
    assert after.state is PendingState.EXPIRED


async def test_a_malformed_extractor_answer_twice_is_no_action_counted_and_never_noted(
    home: Database, caplog: pytest.LogCaptureFixture
):
    provider = RecordedProvider("no JSON here", '{"tendencies": 1}')
    layer = _layer(home, provider, FakeScheduler())
    decision = await layer.decide(_turn("secret words"))
    assert decision.failure is not None and decision.failure.stage == "extract"
    assert list(decision.selection.apply(TOOLS)) == ["memory_read"]
    assert decision.note() is None
    assert layer.failures == {"extract": 1}
    [record] = [r for r in caplog.records if "answer was unusable" in r.getMessage()]
    assert record.levelname == "WARNING" and KEY in record.getMessage()
    assert "the extract stage's answer was unusable" in caplog.text
    assert "secret words" not in caplog.text and "no JSON here" not in caplog.text


def test_a_profile_turns_the_layer_off_or_on_over_the_setting():
    on = _layer(None, RecordedProvider(), FakeScheduler())  # type: ignore[arg-type]
    assert on.enabled_for(DEFAULT_PROFILE)
    assert not on.enabled_for(replace(DEFAULT_PROFILE, actions=False))
    on.settings = ActionsSettings(enabled=False)
    assert not on.enabled_for(DEFAULT_PROFILE)
    assert on.enabled_for(replace(DEFAULT_PROFILE, actions=True))


async def test_a_later_stage_failing_keeps_what_was_applied_and_executes_nothing(
    home: Database,
):
    two = {
        "tendencies": [{"goal": g, "evidence": g} for g in ("lights off", "heat on")],
        "pending": [],
    }
    provider = RecordedProvider(
        two,
        _verdict("confirm", ["lights_set"], timing="immediate"),
        _plan("lights_set"),
        "not JSON",
        "still not JSON",
    )
    decision = await _layer(home, provider, FakeScheduler()).decide(_turn("lights off, heat on"))
    assert decision.failure is not None and decision.failure.stage == "evaluate"
    [waiting] = decision.outcomes
    assert waiting.fate is Fate.WAITING
    assert list(decision.selection.apply(TOOLS)) == ["memory_read"]
    text, payload = decision.note() or ("", {})
    assert f"waiting for the owner's confirmation as {waiting.action_id}" in text
    assert "evaluate" not in text and "failure" not in payload
    [stored] = await _pending(home)
    assert stored.id == waiting.action_id
