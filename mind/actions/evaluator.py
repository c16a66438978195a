"""The Evaluator: one tendency judged against the context and the meta-actions really
available; refused, needs confirmation, immediate, or planned.

The schema says the answer's shape; `_check` what it cannot: the meta-actions named exist,
a planned action (or a confirmation of one) has a usable trigger, times carry an offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mind.actions.context import StageContext, render_meta_actions
from mind.actions.model import Evaluation, MetaAction, Tendency, Verdict
from mind.actions.prompts import EVALUATOR_PROMPT
from mind.actions.structured import Check, Stage, ask
from mind.events.action_views import ActionTiming, TriggerKind, TriggerView
from mind.providers.base import Provider
from mind.scheduler.errors import InvalidTrigger
from mind.scheduler.triggers import check_trigger
from mind.usage import attribution as usage

NAME = "evaluate"
TRIGGER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind"],
    "properties": {
        "kind": {"enum": [kind.value for kind in TriggerKind]},
        "time_zone": {"type": "string"},
        "at": {"type": "string"},
        "every_seconds": {"type": "integer", "minimum": 1},
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


def _trigger_view(given: dict[str, Any], time_zone: str) -> TriggerView:
    """The answer's trigger, read in the owner's zone unless it names one."""
    return TriggerView.from_payload({**given, "time_zone": given.get("time_zone") or time_zone})


def _trigger_problem(given: dict[str, Any], time_zone: str, min_interval: float) -> str | None:
    """What the scheduler would refuse in the answer's trigger (`check_trigger`), or None."""
    for name in ("at", "start_at"):
        if given.get(name):
            problem = _moment_problem(name, given[name])
            if problem:
                return problem
    try:
        check_trigger(_trigger_view(given, time_zone), min_interval)
    except InvalidTrigger as exc:
        return f"trigger: {exc}"
    return None


def _checker(available: frozenset[str], time_zone: str, min_interval: float) -> Check:
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
            return _trigger_problem(answer["trigger"], time_zone, min_interval)
        return None

    return check


def _timing(answer: dict[str, Any]) -> ActionTiming | None:
    verdict = answer["verdict"]
    if verdict == Verdict.CONFIRM:
        return ActionTiming(answer["timing"])
    if verdict == Verdict.REFUSED:
        return None
    return ActionTiming(verdict)


def stage_input(
    tendency: Tendency, context: StageContext, available: Sequence[MetaAction], adapters: str = ""
) -> str:
    """`adapters`: one line per Awareness adapter an observation condition may name."""
    watchable = (
        f"Awareness adapters an observation condition can name (by name):\n{adapters}\n\n"
        if adapters
        else ""
    )
    return (
        f"{context.render()}\n\n{render_meta_actions(available)}\n\n"
        f"Trigger kinds of the scheduler: {', '.join(kind.value for kind in TriggerKind)}.\n"
        f"The owner's time zone: {context.time_zone}.\n\n{watchable}"
        f"The tendency to judge:\ngoal: {tendency.goal}\nevidence: {tendency.evidence}"
    )


def _evaluation(answer: dict[str, Any], time_zone: str) -> Evaluation:
    timing = _timing(answer)
    trigger = None
    if timing is ActionTiming.PLANNED:
        trigger = _trigger_view(answer["trigger"], time_zone)
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
    min_interval: float,
    adapters: str = "",
) -> Evaluation:
    """The verdict on `tendency`; MalformedAnswer when the answer was unusable twice.
    `min_interval` is the scheduler's shortest interval (`[scheduler] min_interval`);
    `adapters` the Awareness adapters an observation condition may name."""
    names = frozenset(action.name for action in available)
    checker = _checker(names, context.time_zone, min_interval)
    stage = Stage(NAME, EVALUATOR_PROMPT, SCHEMA, checker)
    with usage.purpose(usage.EVALUATE):
        answer = await ask(provider, stage, stage_input(tendency, context, available, adapters))
    return _evaluation(answer, context.time_zone)
