"""The Evaluator: one tendency judged against the context and the meta-actions really
available; refused, needs confirmation, immediate, or planned.

The schema says the answer's shape; `_check` what it cannot: the meta-actions named exist,
a planned action (or a confirmation of one) has a usable trigger, times carry an offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mind.actions.context import StageContext, render_meta_actions
from mind.actions.model import Evaluation, MetaAction, Tendency, Verdict
from mind.actions.prompts import EVALUATOR_PROMPT
from mind.actions.structured import Check, Stage, ask
from mind.events.action_views import ActionTiming, TriggerKind, TriggerView
from mind.providers.base import Provider

NAME = "evaluate"
MIN_INTERVAL = 60
TRIGGER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind"],
    "properties": {
        "kind": {"enum": [kind.value for kind in TriggerKind]},
        "time_zone": {"type": "string"},
        "at": {"type": "string"},
        "every_seconds": {"type": "integer", "minimum": MIN_INTERVAL},
        "start_at": {"type": "string"},
        "cron": {"type": "string"},
        "adapter": {"type": "string"},
        "observation_kind": {"type": "string"},
        "match": {"type": "string"},
        "memory_key": {"type": "string"},
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["verdict", "reason", "title", "actions"],
    "properties": {
        "verdict": {"enum": [verdict.value for verdict in Verdict]},
        "reason": {"type": "string"},
        "title": {"type": "string"},
        "actions": {"type": "array", "items": {"type": "string"}},
        "timing": {"enum": [timing.value for timing in ActionTiming]},
        "trigger": TRIGGER_SCHEMA,
    },
}


def _moment_problem(name: str, text: str) -> str | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return f"trigger.{name} {text!r} is not an ISO-8601 time"
    if moment.tzinfo is None:
        return f"trigger.{name} {text!r} has no UTC offset"
    return None


def _trigger_problem(trigger: dict[str, Any]) -> str | None:
    kind = trigger["kind"]
    zone = trigger.get("time_zone", "")
    if zone:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            return f"trigger.time_zone {zone!r} is not an IANA time zone"
    for name in ("at", "start_at"):
        if trigger.get(name):
            problem = _moment_problem(name, trigger[name])
            if problem:
                return problem
    needs = {"at": "at", "interval": "every_seconds", "cron": "cron", "memory": "memory_key"}
    if kind in needs and not trigger.get(needs[kind]):
        return f"a trigger of kind {kind!r} needs `{needs[kind]}`"
    if kind == "cron" and len(trigger["cron"].split()) != 5:
        return f"trigger.cron {trigger['cron']!r} does not have five fields"
    return None


def _checker(available: frozenset[str]) -> Check:
    def check(answer: dict[str, Any]) -> str | None:
        verdict = answer["verdict"]
        if verdict == Verdict.REFUSED:
            return None
        unknown = [name for name in answer["actions"] if name not in available]
        if unknown:
            return f"actions {unknown} are not available meta-actions"
        if not answer["actions"]:
            return f"a verdict of {verdict!r} needs the meta-actions it uses in `actions`"
        if not answer["title"].strip():
            return f"a verdict of {verdict!r} needs a `title`"
        if verdict == Verdict.CONFIRM and "timing" not in answer:
            return "a `confirm` verdict needs `timing` (immediate or planned)"
        if _timing(answer) is ActionTiming.PLANNED:
            if "trigger" not in answer:
                return "a planned action needs a `trigger`"
            return _trigger_problem(answer["trigger"])
        return None

    return check


def _timing(answer: dict[str, Any]) -> ActionTiming | None:
    verdict = answer["verdict"]
    if verdict == Verdict.CONFIRM:
        return ActionTiming(answer["timing"])
    if verdict == Verdict.REFUSED:
        return None
    return ActionTiming(verdict)


def stage_input(tendency: Tendency, context: StageContext, available: Sequence[MetaAction]) -> str:
    return (
        f"{context.render()}\n\n{render_meta_actions(available)}\n\n"
        f"Trigger kinds of the scheduler: {', '.join(kind.value for kind in TriggerKind)}.\n"
        f"The owner's time zone: {context.time_zone}.\n\n"
        f"The tendency to judge:\ngoal: {tendency.goal}\nevidence: {tendency.evidence}"
    )


def _evaluation(answer: dict[str, Any], time_zone: str) -> Evaluation:
    timing = _timing(answer)
    trigger = None
    if timing is ActionTiming.PLANNED:
        given = answer["trigger"]
        trigger = TriggerView.from_payload(
            {**given, "time_zone": given.get("time_zone") or time_zone}
        )
    return Evaluation(
        verdict=Verdict(answer["verdict"]),
        reason=answer["reason"],
        title=answer["title"].strip(),
        actions=tuple(dict.fromkeys(answer["actions"])),
        timing=timing,
        trigger=trigger,
    )


async def evaluate(
    provider: Provider,
    tendency: Tendency,
    context: StageContext,
    available: Sequence[MetaAction],
) -> Evaluation:
    """The verdict on `tendency`; MalformedAnswer when the answer was unusable twice."""
    names = frozenset(action.name for action in available)
    stage = Stage(NAME, EVALUATOR_PROMPT, SCHEMA, _checker(names))
    answer = await ask(provider, stage, stage_input(tendency, context, available))
    return _evaluation(answer, context.time_zone)
