"""Where an observation goes and how its run's origin reads (unit tests of the router's targets,
`mind.awareness.notes` and `mind.conversation.origins`)."""

from __future__ import annotations

import json

import pytest

from mind.awareness.notes import build_note
from mind.awareness.router import source_conversation, target_of
from mind.conversation.access import check_key
from mind.conversation.origins import describe
from mind.conversation.sources import from_json
from tobe.v1 import awareness_pb2 as pb

DEFAULT = "p_awareness"


def _observation(oid: str = "o1", **fields: object) -> pb.Observation:
    values: dict[str, object] = {
        "id": oid,
        "adapter_id": "email-1",
        "adapter_name": "email",
        "instance": "email@work",
        "trust": pb.TRUST_MEDIUM,
        "content_json": json.dumps({"subject": "Approve the wire transfer now"}),
    }
    values.update(fields)
    return pb.Observation(**values)  # type: ignore[arg-type]


def test_a_configured_conversation_wins_then_the_source_then_the_default() -> None:
    configured = _observation(conversation_key="g_team", source_key="INBOX")
    sourced = _observation(source_key="INBOX", source_title="Inbox")
    plain = _observation()
    assert target_of(configured, DEFAULT) == ("g_team", "")
    assert target_of(sourced, DEFAULT) == (
        source_conversation("email@work", "INBOX"),
        "email@work: Inbox",
    )
    assert target_of(plain, DEFAULT) == (DEFAULT, "")
    untitled = target_of(_observation(source_key="Archive/2026"), DEFAULT)
    assert untitled[1] == "email@work: Archive/2026"


@pytest.mark.parametrize(
    ("instance", "source_key"),
    [
        ("email@work", "INBOX"),
        ("telegram", "-100123456789"),
        ("matrix@home", "!room:example.org/" + "x" * 300),
        ("ünïcode", "💬"),
    ],
)
def test_a_source_conversation_key_is_valid_stable_and_its_own(
    instance: str, source_key: str
) -> None:
    key = source_conversation(instance, source_key)
    check_key(key)  # raises for anything a conversation key may not be
    assert key.startswith("p_aw-") and key == source_conversation(instance, source_key)
    assert key != source_conversation(instance, source_key + "2")
    assert key != source_conversation(instance + "x", source_key)


def test_the_origin_names_trust_instances_and_sources_never_content() -> None:
    note = build_note(
        "p_x",
        1,
        [
            _observation("o1", source_key="INBOX", source_title="Inbox"),
            _observation("o2", source_key="INBOX", source_title="Inbox", trust=pb.TRUST_LOW),
        ],
    )
    source = {
        "kind": "observation",
        "trust": note.trust,
        "observation_ids": list(note.observation_ids),
        "instances": list(note.instances),
        "source_titles": list(note.source_titles),
    }
    origin = describe(from_json(source))
    assert origin == "2 low-trust observations from email@work (Inbox)"
    assert "wire transfer" not in origin
    single = build_note("p_x", 2, [_observation()])
    assert (
        describe(
            from_json({"kind": "observation", "trust": single.trust, "instances": single.instances})
        )
        == "a medium-trust observation from email@work"
    )
    assert describe(from_json({"kind": "post", "posted_by": "alice"})) == ""
    assert describe(from_json({})) == ""


def test_an_origin_keeps_names_on_one_line_and_bounded() -> None:
    titles = [f"chat\n{n}\x1b[31m" + "y" * 200 for n in range(8)]
    origin = describe(from_json({"kind": "observation", "trust": "high", "source_titles": titles}))
    assert "\n" not in origin and "\x1b" not in origin
    assert origin.endswith("and 3 more)") and len(origin) < 600
