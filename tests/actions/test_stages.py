"""Extractor, Evaluator and Planner against recorded structured answers, valid and malformed:
each answer is validated, a bad one retried once with what was wrong, a second bad one is
`MalformedAnswer`."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from helpers.recorded_provider import UNAVAILABLE, RecordedProvider

from mind.actions import evaluator, extractor, planner
from mind.actions.context import StageContext
from mind.actions.model import (
    SEND_MESSAGE,
    Evaluation,
    MetaAction,
    PendingChoice,
    Tendency,
    Verdict,
)
from mind.actions.prompts import EVALUATOR_MARK, EXTRACTOR_MARK, PLANNER_MARK
from mind.actions.structured import MalformedAnswer
from mind.events.action_views import (
    ActionTiming,
    PendingActionView,
    PendingState,
    PlanStepView,
    TriggerKind,
)

NOW = datetime(2026, 9, 10, 7, 0, tzinfo=UTC)
# `[scheduler] min_interval`, which the Evaluator holds planned intervals to.
MIN_INTERVAL = 60.0
AVAILABLE = (
    MetaAction("memory_read", "Read a memory entry.", "read_only", "tool"),
    MetaAction("lights_set", "Switch the lights.", "external_side_effect", "tool"),
    MetaAction(SEND_MESSAGE, "Message the owner.", "message_owner", "scheduler"),
)
WAITING = PendingActionView(
    id="act_1",
    conversation_key="p_a",
    title="Lights off",
    goal="Turn the lights off",
    state=PendingState.PENDING,
    timing=ActionTiming.IMMEDIATE,
    plan=(PlanStepView(1, "lights_set", "off"),),
    trigger=None,
    reason="changes the house",
    created_at=NOW,
    expires_at=NOW,
)


def _context(*pending: PendingActionView) -> StageContext:
    return StageContext(("Owner: hello",), NOW, "Europe/Paris", pending)


def _lights(verdict: str = "immediate", **extra: object) -> dict[str, object]:
    return {
        "verdict": verdict,
        "reason": "the owner asked",
        "title": "Lights off",
        "actions": ["lights_set"],
        **extra,
    }


def _step(order: int, action: str, after: list[int]) -> dict[str, object]:
    return {"order": order, "action": action, "purpose": f"step {order}", "after": after}


EVALUATED = Evaluation(
    Verdict.IMMEDIATE,
    "the owner asked",
    "Lights off",
    ("lights_set",),
    ActionTiming.IMMEDIATE,
    None,
)

# Extractor


async def test_ordinary_chat_costs_exactly_one_small_extractor_call():
    provider = RecordedProvider({"tendencies": [], "pending": []})
    found = await extractor.extract(provider, "Explain how tides work", _context())
    assert found.tendencies == () and found.pending == ()
    assert len(provider.requests) == 1
    request = provider.requests[0]
    assert request.system.startswith(EXTRACTOR_MARK) and not request.tools
    assert "Explain how tides work" in request.messages[0].text


async def test_the_extractor_reads_tendencies_and_answers_to_pending_actions():
    provider = RecordedProvider(
        {
            "tendencies": [{"goal": "Water the plants", "evidence": "water the plants"}],
            "pending": [{"id": "act_1", "decision": "amend", "amendment": "only the kitchen"}],
        }
    )
    found = await extractor.extract(provider, "yes but only the kitchen", _context(WAITING))
    assert found.tendencies == (Tendency("Water the plants", "water the plants"),)
    assert [(d.id, d.decision, d.amendment) for d in found.pending] == [
        ("act_1", PendingChoice.AMEND, "only the kitchen")
    ]
    assert "act_1: Lights off" in provider.requests[0].messages[0].text


async def test_an_extractor_answer_that_does_not_parse_is_retried_once_with_why():
    fenced = '```json\n{"tendencies": [], "pending": []}\n```'
    provider = RecordedProvider("Sure! Here you go", fenced)
    found = await extractor.extract(provider, "hi", _context())
    assert found.tendencies == () and found.pending == ()
    retry = provider.requests[1].messages
    assert [m.role for m in retry] == ["user", "assistant", "user"]
    assert retry[1].text == "Sure! Here you go"
    assert "holds no JSON object" in retry[2].text


async def test_an_extractor_answer_violating_the_schema_twice_is_malformed():
    provider = RecordedProvider({"tendencies": "none"}, {"tendencies": [], "pending": [{"id": 3}]})
    with pytest.raises(MalformedAnswer) as raised:
        await extractor.extract(provider, "hi", _context())
    assert raised.value.stage == "extract" and raised.value.category == "schema violation"
    assert "violates the schema" in provider.requests[1].messages[2].text
    assert len(provider.requests) == 2


async def test_an_extractor_naming_an_action_it_was_not_shown_is_malformed():
    wrong = {"tendencies": [], "pending": [{"id": "act_9", "decision": "confirm"}]}
    provider = RecordedProvider(wrong, wrong)
    with pytest.raises(MalformedAnswer, match="act_9"):
        await extractor.extract(provider, "yes", _context(WAITING))


async def test_a_provider_error_is_retried_once_then_malformed():
    provider = RecordedProvider(UNAVAILABLE, UNAVAILABLE)
    with pytest.raises(MalformedAnswer) as raised:
        await extractor.extract(provider, "hi", _context())
    assert raised.value.category == "provider unavailable"
    assert provider.requests[1].messages[1].text == "(no answer)"


# Evaluator


async def test_the_evaluator_sees_the_meta_actions_and_answers_a_verdict():
    provider = RecordedProvider(_lights())
    judged = await evaluator.evaluate(
        provider, Tendency("Lights off", "x"), _context(), AVAILABLE, MIN_INTERVAL
    )
    assert judged == EVALUATED
    request = provider.requests[0]
    assert request.system.startswith(EVALUATOR_MARK)
    assert "- lights_set [external_side_effect, tool]" in request.messages[0].text
    assert "send_message [message_owner, scheduler]" in request.messages[0].text


async def test_a_planned_verdict_carries_its_trigger_in_the_owners_zone():
    at = "2026-09-11T09:00:00+02:00"
    answer = _lights("planned", actions=[SEND_MESSAGE], trigger={"kind": "at", "at": at})
    provider = RecordedProvider(answer)
    judged = await evaluator.evaluate(
        provider, Tendency("Remind me", "x"), _context(), AVAILABLE, MIN_INTERVAL
    )
    assert judged.timing is ActionTiming.PLANNED and judged.trigger is not None
    assert judged.trigger.kind is TriggerKind.AT and judged.trigger.time_zone == "Europe/Paris"
    assert judged.trigger.at == datetime(2026, 9, 11, 7, 0, tzinfo=UTC)


async def test_an_evaluator_naming_an_unknown_action_is_retried_then_accepted():
    provider = RecordedProvider(_lights(actions=["teleport"]), _lights())
    judged = await evaluator.evaluate(
        provider, Tendency("Lights off", "x"), _context(), AVAILABLE, MIN_INTERVAL
    )
    assert judged == EVALUATED
    assert "['teleport'] are not available meta-actions" in provider.requests[1].messages[2].text


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (_lights("confirm"), "needs `timing`"),
        (_lights("planned", actions=[SEND_MESSAGE]), "needs a `trigger`"),
        (
            _lights("planned", trigger={"kind": "at", "at": "2026-09-11T09:00:00"}),
            "has no UTC offset",
        ),
        (_lights("planned", trigger={"kind": "cron", "cron": "0 9 *"}), "five-field cron"),
        (_lights("planned", trigger={"kind": "cron", "cron": "0 25 * * *"}), "five-field cron"),
        (
            _lights("planned", trigger={"kind": "interval", "every_seconds": 5}),
            "below the shortest allowed",
        ),
        (
            _lights(
                "planned",
                trigger={
                    "kind": "at",
                    "at": "2026-09-11T09:00:00+00:00",
                    "time_zone": "Mars/Olympus",
                },
            ),
            "Mars/Olympus",
        ),
        (_lights("maybe"), "violates the schema at verdict"),
    ],
)
async def test_an_evaluator_answer_wrong_twice_is_malformed(bad: dict[str, object], why: str):
    provider = RecordedProvider(bad, bad)
    with pytest.raises(MalformedAnswer) as raised:
        await evaluator.evaluate(
            provider, Tendency("Lights off", "x"), _context(), AVAILABLE, MIN_INTERVAL
        )
    assert raised.value.stage == "evaluate" and why in raised.value.why


# Planner


async def test_the_planner_answers_steps_in_dependency_order():
    steps = [_step(2, "lights_set", [1]), _step(1, "memory_read", [])]
    provider = RecordedProvider({"steps": steps})
    plan = await planner.plan(provider, "Lights off", EVALUATED, _context(), AVAILABLE)
    assert plan == (
        PlanStepView(1, "memory_read", "step 1"),
        PlanStepView(2, "lights_set", "step 2", (1,)),
    )
    assert provider.requests[0].system.startswith(PLANNER_MARK)


@pytest.mark.parametrize(
    ("steps", "why"),
    [
        ([_step(1, "teleport", [])], "'teleport', which is not an available meta-action"),
        ([_step(1, "memory_read", [2]), _step(2, "lights_set", [])], "depend only on earlier"),
        ([_step(1, "memory_read", [2]), _step(2, "lights_set", [1])], "no cycles"),
        ([_step(1, "lights_set", [1])], "no cycles"),
        ([_step(1, "memory_read", []), _step(3, "lights_set", [1])], "orders must be 1..2"),
    ],
)
async def test_a_plan_failing_its_checks_is_retried_with_the_reason(
    steps: list[dict[str, object]], why: str
):
    good = {"steps": [_step(1, "lights_set", [])]}
    provider = RecordedProvider({"steps": steps}, good)
    plan = await planner.plan(provider, "Lights off", EVALUATED, _context(), AVAILABLE)
    assert plan == (PlanStepView(1, "lights_set", "step 1"),)
    assert why in provider.requests[1].messages[2].text


async def test_a_plan_wrong_twice_is_malformed():
    forward = {"steps": [_step(1, "memory_read", [2]), _step(2, "lights_set", [])]}
    provider = RecordedProvider("{not json", forward)
    with pytest.raises(MalformedAnswer) as raised:
        await planner.plan(provider, "Lights off", EVALUATED, _context(), AVAILABLE)
    assert raised.value.stage == "plan" and "depends on [2]" in raised.value.why
    assert len(provider.requests) == 2
