"""Reading a stage's answer tolerantly: the JSON object wherever the model put it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mind.actions.structured import Stage, ask, candidates
from mind.providers.base import ProviderRequest, ProviderResult

ANSWER = {"tendencies": [], "pending": []}
TRICKY = {"goal": 'say {hi} and "quote" }', "evidence": "```json not a fence"}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["tendencies", "pending"],
    "properties": {"tendencies": {"type": "array"}, "pending": {"type": "array"}},
}


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        (json.dumps(ANSWER), ANSWER),
        (f"  {json.dumps(ANSWER)}\n", ANSWER),
        (f"Sure! Here it is: {json.dumps(ANSWER)}", ANSWER),
        (f"{json.dumps(ANSWER)}\nHope this helps.", ANSWER),
        (f"```json\n{json.dumps(ANSWER)}\n```", ANSWER),
        (f"Here:\n```\n{json.dumps(ANSWER)}\n```\nDone.", ANSWER),
        (f"Use {{curly}} braces, then {json.dumps(TRICKY)} - ok", TRICKY),
        (f"Nested: {json.dumps({'a': {'b': [1, {'c': '}'}]}})}", {"a": {"b": [1, {"c": "}"}]}}),
    ],
)
def test_the_first_json_object_is_found_whatever_surrounds_it(text: str, wanted: Any):
    assert next(candidates(text)) == wanted


@pytest.mark.parametrize("text", ["", "no JSON at all", "{not: json}", "``` ```"])
def test_text_without_a_json_object_has_no_candidate(text: str):
    assert list(candidates(text)) == []


async def test_an_example_before_the_answer_is_passed_over_for_the_valid_one():
    class Provider:
        name, model = "p", "m"

        async def complete(self, request: ProviderRequest, on_event: Any) -> ProviderResult:
            return ProviderResult(text=f'For example {{"x": 1}}; my answer: {json.dumps(ANSWER)}')

        async def aclose(self) -> None:
            return None

    stage = Stage("extract", "Extract.", SCHEMA)
    assert await ask(Provider(), stage, "hi") == ANSWER


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
prose = st.text(alphabet=st.characters(blacklist_characters="{"), max_size=40)


@given(
    before=prose,
    after=st.text(max_size=40),
    value=st.dictionaries(st.text(max_size=6), json_values, max_size=4),
)
def test_any_object_amid_prose_without_braces_before_it_is_read_back(
    before: str, after: str, value: dict[str, Any]
):
    assert next(candidates(f"{before}{json.dumps(value)}{after}")) == value
