"""The scenarios of `tobe hand check` quote hand.proto verbatim, and the arguments of its
approval scenarios are inputs of the approval digest's test vectors."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hand.check.scenarios import SCENARIOS, TRICKY_ARGUMENTS

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "proto" / "tobe" / "v1" / "hand.proto"
VECTORS = ROOT / "proto" / "tobe" / "v1" / "testdata" / "arguments_digest_vectors.json"


def _normalized(text: str) -> str:
    return " ".join(text.split())


def test_every_scenario_quotes_the_proto_comments_verbatim() -> None:
    comments = _normalized(
        " ".join(
            line.strip().removeprefix("//")
            for line in PROTO.read_text().splitlines()
            if line.strip().startswith("//")
        )
    )
    for scenario in SCENARIOS:
        for passage in scenario.quote:
            assert _normalized(passage) in comments, (scenario.name, passage)


def test_the_approval_arguments_are_digest_test_vector_inputs() -> None:
    inputs = {vector["arguments_json"] for vector in json.loads(VECTORS.read_text())["vectors"]}
    for arguments in TRICKY_ARGUMENTS:
        vector = re.sub(r'^\{"text":"[a-z]+",', "{", arguments)
        assert vector in inputs, arguments
