"""A Hand declares its tools' decision templates; the Mind checks and renders them."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from hand import Hand
from hand.reference import build_reference_hand
from mind.remote.hello import InvalidTools, parse_tools
from mind.remote.tools import RemoteTool
from mind.tools.decision import decision_text
from tobe.v1 import hand_pb2

Secret = Annotated[str, Field(json_schema_extra={"x-sensitive": True})]


def test_a_decision_template_declared_with_the_sdk_reaches_the_mind_and_renders() -> None:
    hand = Hand("laptop")

    @hand.tool(effect="external_side_effect", decision="run {argv} in {cwd}")
    async def run(argv: list[str], cwd: str = ".") -> str:
        """Run a program."""
        return "ran"

    [spec] = hand._hello().tools
    assert spec.decision_template == "run {argv} in {cwd}"
    decl = parse_tools([spec])["run"]
    assert decl.decision_template == "run {argv} in {cwd}"
    tool = RemoteTool(None, "laptop", "hand_1", decl)  # type: ignore[arg-type]
    argv = ["grep", "-r", "two words", "src"]
    assert tool.render_decision({"argv": argv}) == f"run {shlex.join(argv)} in ."


def test_an_argument_the_sdk_marks_sensitive_is_masked_in_the_decision_text() -> None:
    hand = Hand("laptop")

    @hand.tool(effect="workspace_write")
    def unlock(door: str, pin: Secret) -> str:
        """Unlock a door."""
        return "open"

    [spec] = hand._hello().tools
    decl = parse_tools([spec])["unlock"]
    tool = RemoteTool(None, "laptop", "hand_1", decl)  # type: ignore[arg-type]
    text = decision_text(tool, {"door": "front", "pin": "4711"})
    assert text == 'laptop__unlock {"door":"front","pin":"[REDACTED]"}'


def test_the_reference_hand_declares_run_command_by_its_command_line(tmp_path: Path) -> None:
    specs = {spec.name: spec for spec in build_reference_hand("laptop", tmp_path)._hello().tools}
    assert specs["run_command"].decision_template == "{argv}"
    assert specs["read_file"].decision_template == ""


def test_a_tool_without_a_template_declares_none() -> None:
    hand = Hand("laptop")

    @hand.tool
    def ping() -> str:
        return "pong"

    [spec] = hand._hello().tools
    assert spec.decision_template == ""
    assert parse_tools([spec])["ping"].decision_template == ""


@pytest.mark.parametrize(
    ("template", "problem"),
    [("{argv", "unmatched '{'"), ("{nope}", "{nope} names no argument"), ("a}b", "unmatched '}'")],
)
def test_an_invalid_template_is_refused_at_declaration_and_at_hello(
    template: str, problem: str
) -> None:
    hand = Hand("laptop")
    with pytest.raises(ValueError, match=problem):

        @hand.tool(decision=template)
        def run(argv: list[str]) -> str:
            return "ran"

    spec = hand_pb2.ToolSpec(
        name="run",
        parameters_json_schema='{"type":"object","properties":{"argv":{"type":"array"}}}',
        decision_template=template,
    )
    with pytest.raises(InvalidTools, match=r"hello\.tools\[0\]\.decision_template: " + problem):
        parse_tools([spec])
