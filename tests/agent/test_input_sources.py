"""Input sources: the typed value of each kind, and the stored `inputs.source` column.

Existing databases and backups hold the shapes below, written before the sources were typed:
each must read back as its kind and, written again, give the same JSON text byte for byte.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mind.conversation import origins
from mind.conversation.sources import (
    DecisionSource,
    FiringSource,
    ObservationSource,
    PersonSource,
    PostSource,
    from_json,
    from_person,
    to_json,
)

# One row per kind, exactly as the Mind stores them today.
TODAYS_SHAPES: list[tuple[dict[str, Any], type]] = [
    ({}, PersonSource),
    ({"kind": "post", "posted_by": "alice"}, PostSource),
    (
        {
            "kind": "firing",
            "firing_id": 7,
            "schedule_id": "sch_1",
            "title": "Stretch",
            "attempt": 2,
        },
        FiringSource,
    ),
    (
        {
            "kind": "observation",
            "trust": "medium",
            "permissions": {"workspace_write": False},
            "adapters": ["email"],
            "instances": ["email@work"],
            "source_titles": ["INBOX"],
            "observation_ids": ["o1", "o2"],
            "publish_seq": 12,
        },
        ObservationSource,
    ),
    ({"kind": "action_decision", "action_id": "act_1", "decision": "confirm"}, DecisionSource),
    (
        {
            "kind": "action_decision",
            "action_id": "act_1",
            "decision": "amend",
            "amendment": "at nine instead",
        },
        DecisionSource,
    ),
]


@pytest.mark.parametrize(("stored", "kind"), TODAYS_SHAPES)
def test_todays_stored_sources_read_as_their_kind_and_write_back_byte_for_byte(
    stored: dict[str, Any], kind: type
) -> None:
    source = from_json(json.loads(json.dumps(stored)))
    assert isinstance(source, kind)
    assert json.dumps(to_json(source)) == json.dumps(stored)


def test_an_observation_stored_with_fewer_fields_reads_with_their_defaults() -> None:
    source = from_json({"kind": "observation", "adapters": ["mail"]})
    assert source == ObservationSource(adapters=("mail",))
    assert origins.describe(source) == "a unspecified-trust observation from mail"


def test_a_firing_stored_without_its_attempt_is_the_first() -> None:
    stored = {"kind": "firing", "firing_id": 3, "schedule_id": "s", "title": "t"}
    assert from_json(stored) == FiringSource(3, "s", "t", 1)


def test_a_source_of_a_kind_no_mind_writes_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown kind 'telepathy'"):
        from_json({"kind": "telepathy"})


def test_only_a_person_and_their_decision_count_as_from_a_person() -> None:
    assert from_person(PersonSource())
    assert from_person(DecisionSource("act_1", "confirm"))
    assert not from_person(PostSource("alice"))
    assert not from_person(FiringSource(1, "s", "t"))
    assert not from_person(ObservationSource())
