"""The Extractor: which action tendencies an input holds, and which pending actions it
answers.

The only stage ordinary chat pays for: one small call whose answer is usually
`{"tendencies": [], "pending": []}`.
"""

from __future__ import annotations

from typing import Any

from mind.actions.context import StageContext
from mind.actions.model import Extraction, PendingChoice, PendingDecision, Tendency
from mind.actions.prompts import EXTRACTOR_PROMPT
from mind.actions.structured import Check, Stage, ask
from mind.providers.base import Provider
from mind.usage import attribution as usage

NAME = "extract"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["tendencies", "pending"],
    "properties": {
        "tendencies": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["goal", "evidence"],
                "properties": {
                    "goal": {"type": "string", "minLength": 1},
                    "evidence": {"type": "string"},
                },
            },
        },
        "pending": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "decision"],
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "decision": {"enum": [choice.value for choice in PendingChoice]},
                    "amendment": {"type": "string"},
                },
            },
        },
    },
}


def _checker(shown: frozenset[str]) -> Check:
    def check(answer: dict[str, Any]) -> str | None:
        for item in answer["pending"]:
            if item["id"] not in shown:
                known = ", ".join(sorted(shown)) or "none"
                return (
                    f"pending names {item['id']!r}, which is not a pending action (shown: {known})"
                )
            if item["decision"] == PendingChoice.AMEND and not item.get("amendment", "").strip():
                return f"pending {item['id']!r} is amended without an `amendment`"
        return None

    return check


def stage_input(text: str, context: StageContext) -> str:
    return f"{context.render()}\n\nThe owner's input:\n{text}"


async def extract(provider: Provider, text: str, context: StageContext) -> Extraction:
    """The tendencies in `text` and its answers to pending actions; MalformedAnswer when the
    model's answer was unusable twice."""
    shown = frozenset(action.id for action in context.pending)
    stage = Stage(NAME, EXTRACTOR_PROMPT, SCHEMA, _checker(shown))
    with usage.purpose(usage.EXTRACT):
        answer = await ask(provider, stage, stage_input(text, context))
    return Extraction(
        tuple(Tendency(item["goal"], item["evidence"]) for item in answer["tendencies"]),
        tuple(
            PendingDecision(item["id"], PendingChoice(item["decision"]), item.get("amendment", ""))
            for item in answer["pending"]
        ),
    )
