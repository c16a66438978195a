"""The decision text: what a person reads before approving a call, in every detail mode."""

from __future__ import annotations

import json
import shlex
from typing import Any

from approval_calls import make_call
from sqlalchemy import select
from sqlalchemy.orm import Session

from face.projection import AdmissionModes, project_approval, project_event
from mind.approvals.broker import ApprovalBroker
from mind.remote.model import ToolDecl
from mind.remote.tools import RemoteTool
from mind.store.database import Database
from mind.store.models import Approval, ApprovalAudit, OutboxEvent
from mind.tools.authorizer import Decision
from mind.tools.base import Effect, ToolContext, ToolOutcome
from mind.tools.builtin import WaitTool
from mind.tools.decision import DECISION_LIMIT, decision_text
from tobe.runtime.decision_template import render_template
from tobe.v1 import common_pb2, events_pb2

SUMMARY = common_pb2.DETAIL_MODE_SUMMARY
TRANSPARENT = common_pb2.DETAIL_MODE_TRANSPARENT


class PlainTool:
    """A tool that writes no decision text of its own."""

    name = "notes__save"
    description = "Save a note."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "text": {"type": "string"},
            "pin": {"type": "string", "x-sensitive": True},
        },
    }
    effect = Effect.WORKSPACE_WRITE
    hand_id = "laptop"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolOutcome(ok=True)


def run_command_tool() -> RemoteTool:
    """The reference Hand's `run_command` as the Mind sees it: declared template `{argv}`."""
    decl = ToolDecl(
        name="run_command",
        description="Run a program.",
        parameters={
            "type": "object",
            "properties": {
                "argv": {"type": "array", "items": {"type": "string"}},
                "cwd": {"type": "string", "default": "."},
            },
        },
        effect=Effect.EXTERNAL_SIDE_EFFECT,
        decision_template="{argv}",
    )
    return RemoteTool(None, "laptop", "hand_1", decl)  # type: ignore[arg-type]


def test_a_tool_without_its_own_text_gets_its_name_and_arguments_as_compact_json() -> None:
    text = decision_text(PlainTool(), {"name": "a.txt", "text": "héllo"})
    assert text == 'notes__save {"name":"a.txt","text":"héllo"}'


def test_sensitive_arguments_and_credentials_never_reach_the_decision_text() -> None:
    text = decision_text(
        PlainTool(), {"name": "a.txt", "text": "Bearer sk-live-123456", "pin": "PIN-7731"}
    )
    assert "PIN-7731" not in text and "sk-live-123456" not in text
    assert '"pin":"[REDACTED]"' in text


def test_run_command_shows_the_full_command_line_shell_quoted() -> None:
    argv = ["git", "commit", "-m", "fix: it's done", "--", "a file.txt"]
    assert decision_text(run_command_tool(), {"argv": argv}) == shlex.join(argv)


def test_a_long_decision_text_is_cut_with_a_marker_saying_how_much_was_cut() -> None:
    argv = ["echo", "x" * 5000]
    full = shlex.join(argv)
    text = decision_text(run_command_tool(), {"argv": argv})
    cut = len(full) - DECISION_LIMIT
    assert text == f"{full[:DECISION_LIMIT]}… [{cut} more characters cut]"
    exactly = ["echo", "y" * (DECISION_LIMIT - len("echo "))]
    assert decision_text(run_command_tool(), {"argv": exactly}) == shlex.join(exactly)


def test_control_characters_cannot_hide_part_of_the_decision_text() -> None:
    text = decision_text(run_command_tool(), {"argv": ["rm", "-rf", "x\r\x1b[2Kls", "\u202eab"]})
    assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
    assert "\\x0d\\x1b[2Kls" in text and "\\u202e" in text


def test_built_in_tools_write_their_own_text() -> None:
    assert decision_text(WaitTool(), {"seconds": 30}) == "wait 30 seconds"


def test_template_rendering_rule() -> None:
    arguments = {"argv": ["ls", "-l"], "n": 3, "flags": {"a": True}, "s": "plain"}
    assert render_template("{argv}|{n}|{flags}|{s}|{absent}|{{x}}", arguments) == (
        'ls -l|3|{"a":true}|plain||{x}'
    )


def test_an_absent_argument_renders_its_schema_default() -> None:
    decl = ToolDecl(
        name="water",
        description="",
        effect=Effect.EXTERNAL_SIDE_EFFECT,
        parameters={"properties": {"zone": {}, "minutes": {"default": 5}}},
        decision_template="water {zone} for {minutes} minutes",
    )
    tool = RemoteTool(None, "garden", "hand_2", decl)  # type: ignore[arg-type]
    assert decision_text(tool, {"zone": "north"}) == "water north for 5 minutes"


def test_face_keeps_the_decision_text_for_a_summary_viewer() -> None:
    approval = common_pb2.Approval(
        id="ap_1",
        tool_call_id="call_1",
        tool="laptop__run_command",
        arguments_json='{"argv":["ls"]}',
        decision_text="ls -la",
    )
    modes = AdmissionModes()
    modes.record(common_pb2.ToolProjection(tool_call_id="call_1", admitted_mode=TRANSPARENT))
    shown = project_approval(approval, SUMMARY, modes)
    assert shown.arguments_json == "" and shown.decision_text == "ls -la"
    event = project_event(events_pb2.Event(approval_changed=approval), SUMMARY, modes)
    assert event is not None and event.approval_changed.decision_text == "ls -la"


async def test_the_decision_text_is_stored_and_sent_in_summary_mode_but_never_audited(
    database: Database, conversation: str
) -> None:
    broker = ApprovalBroker(database, expiry=600)
    call = make_call(decision_text="rm -rf build/")
    record = await broker.request(call, arguments_summary="argv=<list of 3 items>", reason="r")
    assert record.decision_text == "rm -rf build/"
    decided = await broker.decide(record.id, Decision.DENY, principal="alice", reason="no")
    assert decided.decision_text == "rm -rf build/"

    def stored(session: Session) -> tuple[Approval | None, list[dict[str, Any]], list[str]]:
        row = session.get(Approval, record.id)
        events = list(session.scalars(select(OutboxEvent.payload)))
        audit = list(session.scalars(select(ApprovalAudit.summary)))
        return row, events, audit

    row, events, audit = await database.read(stored)
    assert row is not None and row.decision_text == "rm -rf build/"
    assert [e["decision_text"] for e in events] == ["rm -rf build/"] * 2
    assert all(e["arguments_json"] == "" for e in events)
    assert audit and all("rm -rf" not in summary for summary in audit)
    assert "rm -rf" not in json.dumps([e["arguments_summary"] for e in events])
