"""The Planner: an evaluated action as an ordered chain of meta-actions with strict
dependencies.

What the schema cannot say is checked here, and a plan failing it counts as malformed (the
model is told why and asked once more): every step names an available meta-action; orders
are 1..n; `after` names only earlier steps (strict dependencies: no cycles, no forward
references), so the steps sorted by order are in dependency order. The dependencies are then
completed: a step depends on every step its dependencies depend on (the transitive closure),
so what runs a step can check only the step's own list. A planned action's
available meta-actions are only the schedulable ones (read-only, `send_message`): its plan
runs in a proactive run that can do nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mind.actions.context import StageContext, render_meta_actions
from mind.actions.model import Evaluation, MetaAction, Plan
from mind.actions.prompts import PLANNER_PROMPT
from mind.actions.structured import Check, Stage, ask
from mind.events.action_views import PlanStepView
from mind.providers.base import Provider
from mind.usage import attribution as usage

NAME = "plan"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["steps"],
    "properties": {
        "steps": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["order", "action", "purpose", "after"],
                "properties": {
                    "order": {"type": "integer", "minimum": 1},
                    "action": {"type": "string", "minLength": 1},
                    "purpose": {"type": "string"},
                    "after": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                },
            },
        }
    },
}


def plan_problem(steps: list[dict[str, Any]], available: frozenset[str]) -> str | None:
    """What is wrong with a plan's steps, or None."""
    orders = sorted(step["order"] for step in steps)
    if orders != list(range(1, len(steps) + 1)):
        return f"step orders must be 1..{len(steps)}, each once (got {orders})"
    for step in steps:
        if step["action"] not in available:
            name = step["action"]
            return f"step {step['order']} uses {name!r}, which is not an available meta-action"
        later = [order for order in step["after"] if order >= step["order"]]
        if later:
            return (
                f"step {step['order']} depends on {later}: a step may depend only on earlier "
                "steps (no cycles, no forward references)"
            )
    return None


def _checker(available: frozenset[str]) -> Check:
    return lambda answer: plan_problem(answer["steps"], available)


def stage_input(
    goal: str, evaluation: Evaluation, context: StageContext, available: Sequence[MetaAction]
) -> str:
    timing = evaluation.timing.value if evaluation.timing else ""
    return (
        f"{context.render()}\n\n{render_meta_actions(available)}\n\n"
        f"The action to plan:\ngoal: {goal}\ntitle: {evaluation.title}\ntiming: {timing}\n"
        f"meta-actions the evaluation named: {', '.join(evaluation.actions)}"
    )


async def plan(
    provider: Provider,
    goal: str,
    evaluation: Evaluation,
    context: StageContext,
    available: Sequence[MetaAction],
) -> Plan:
    """The ordered plan; MalformedAnswer when the answer was unusable twice."""
    names = frozenset(action.name for action in available)
    stage = Stage(NAME, PLANNER_PROMPT, SCHEMA, _checker(names))
    with usage.purpose(usage.PLAN):
        answer = await ask(provider, stage, stage_input(goal, evaluation, context, available))
    return completed(answer["steps"])


def completed(steps: list[dict[str, Any]]) -> Plan:
    """Checked steps in order, each depending on its dependencies' dependencies too."""
    closure: dict[int, frozenset[int]] = {}
    plan = []
    for step in sorted(steps, key=lambda step: step["order"]):
        after = set(step["after"])
        for earlier in step["after"]:
            after |= closure[earlier]
        closure[step["order"]] = frozenset(after)
        plan.append(
            PlanStepView(step["order"], step["action"], step["purpose"], tuple(sorted(after)))
        )
    return tuple(plan)
