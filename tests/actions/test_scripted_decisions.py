"""The Scripted provider's `decisions`: a stage recognised by its prompt, answer i played for
attempt i, and the defaults (ordinary chat for the Extractor, a protocol error otherwise)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mind.actions import evaluator, extractor
from mind.actions.context import StageContext
from mind.actions.model import MetaAction, Tendency
from mind.actions.structured import MalformedAnswer
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script

SCRIPT = {
    "runs": [{"match": ".*", "steps": [{"text": "chat"}]}],
    "decisions": [
        {
            "stage": "extract",
            "match": "water the plants",
            "answers": ["not JSON", {"tendencies": [{"goal": "Water", "evidence": "w"}]}],
        },
        {
            "stage": "extract",
            "match": "fixed",
            "answers": ["nope", {"tendencies": [{"goal": "Fix", "evidence": "f"}], "pending": []}],
        },
    ],
}
CONTEXT = StageContext((), datetime(2026, 9, 10, tzinfo=UTC), "UTC", ())


def _provider() -> ScriptedProvider:
    return ScriptedProvider(parse_script(json.dumps(SCRIPT), "test"))


async def test_a_rule_plays_its_answers_in_attempt_order():
    found = await extractor.extract(_provider(), "get this fixed", CONTEXT)
    assert [t.goal for t in found.tendencies] == ["Fix"]


async def test_two_malformed_scripted_answers_are_a_malformed_answer():
    with pytest.raises(MalformedAnswer, match="pending"):
        await extractor.extract(_provider(), "water the plants", CONTEXT)


async def test_without_a_rule_the_extractor_hears_ordinary_chat_and_the_evaluator_an_error():
    found = await extractor.extract(_provider(), "how are you?", CONTEXT)
    assert found.tendencies == () and found.pending == ()
    tool = MetaAction("memory_read", "read", "read_only", "tool")
    with pytest.raises(MalformedAnswer, match="no scripted `evaluate` decision"):
        await evaluator.evaluate(_provider(), Tendency("x", "x"), CONTEXT, [tool], 60.0)
