"""The approval digest's test vectors: the Hand SDK passes each, and the contract lists them.

`proto/tobe/v1/testdata/arguments_digest_vectors.json` is what a Hand in any language runs;
the `hand.proto` file comment shows the same vectors to a reader.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pydantic
import pytest

from hand import Effect, Hand, ToolFunction
from tobe.runtime.digest import NotCanonicalizable, arguments_digest, canonical_json
from tobe.v1 import hand_pb2

PROTO = Path(__file__).resolve().parents[2] / "proto" / "tobe" / "v1"
VECTORS: dict[str, Any] = json.loads(
    (PROTO / "testdata" / "arguments_digest_vectors.json").read_text(encoding="utf-8")
)
_COMMENT_VECTOR = re.compile(r"^//   (\{.*\})\n//       (.+)$", re.MULTILINE)
_REFUSAL = re.compile(r"refused at (\S+) \((\w+)\)")


class AnyArguments(pydantic.BaseModel):
    """Whatever object a vector holds: the Hand checks only the digest here."""

    model_config = pydantic.ConfigDict(extra="allow")


async def _act(**_: Any) -> str:
    return "done"


def _hand() -> Hand:
    hand = Hand("laptop")
    hand.add_tool(
        ToolFunction(
            name="act",
            description="Acts.",
            effect=Effect.EXTERNAL_SIDE_EFFECT,
            background=False,
            function=_act,
            arguments=AnyArguments,
            schema={"type": "object"},
        )
    )
    return hand


def _offer(arguments_json: str, digest: str) -> hand_pb2.TaskOffer:
    offer = hand_pb2.TaskOffer(task_id="t_1", attempt=1, tool="act", arguments_json=arguments_json)
    offer.approval.arguments_digest = digest
    return offer


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_the_sdk_digest_matches_every_vector(vector: dict[str, str]) -> None:
    arguments = json.loads(vector["arguments_json"])
    assert canonical_json(arguments) == vector["canonical"]
    assert arguments_digest(arguments) == vector["digest"]
    reason, tool, _ = _hand()._screen(_offer(vector["arguments_json"], vector["digest"]))
    assert reason is None and tool is not None


@pytest.mark.parametrize("vector", VECTORS["refused"], ids=lambda v: v["name"])
def test_the_sdk_refuses_every_refused_vector_naming_where(vector: dict[str, str]) -> None:
    with pytest.raises(NotCanonicalizable) as raised:
        arguments_digest(json.loads(vector["arguments_json"]))
    assert (raised.value.path, raised.value.kind) == (vector["path"], vector["kind"])
    reason, tool, _ = _hand()._screen(_offer(vector["arguments_json"], "0" * 64))
    assert tool is None and reason is not None and vector["path"] in reason


def test_the_proto_comment_lists_the_same_vectors_as_the_file() -> None:
    comment = (PROTO / "hand.proto").read_text(encoding="utf-8").split('syntax = "proto3";')[0]
    listed = _COMMENT_VECTOR.findall(comment)
    digests = [(v["arguments_json"], v["digest"]) for v in VECTORS["vectors"]]
    refusals = [(v["arguments_json"], (v["path"], v["kind"])) for v in VECTORS["refused"]]
    assert [item for item in listed if item[1][0] != "r"] == digests
    assert [(text, _refusal(outcome)) for text, outcome in listed if outcome[0] == "r"] == refusals


def _refusal(outcome: str) -> tuple[str, ...]:
    match = _REFUSAL.fullmatch(outcome)
    assert match is not None, f"not a refusal: {outcome!r}"
    return match.groups()


def test_a_refusal_names_nested_paths_and_quotes_keys_that_are_not_names() -> None:
    with pytest.raises(
        NotCanonicalizable, match=r'arguments\["a b"\]\[1\]\.c is -9007199254740992'
    ):
        arguments_digest({"a b": [0, {"c": -(2**53)}]})
    with pytest.raises(NotCanonicalizable, match="pass such a number as a string"):
        arguments_digest({"n": 2**64})
