"""A person approving `run_command` sees the full command line, even in summary mode.

Real processes: a Mind, Face in front of it, the reference Hand (on a thread), a summary-mode
Face client, and `tobe admin` against the running Mind.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from approval_e2e import Client, HandThread, run_ended
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, issue_token, running_mind

from hand.reference import build_reference_hand
from tobe.v1 import common_pb2, events_pb2, face_pb2

pytestmark = pytest.mark.e2e

SUMMARY = common_pb2.DETAIL_MODE_SUMMARY
# A command line whose summary (`argv=<list of 6 items>`) says nothing about what it does.
ARGV = ["grep", "-rn", "needle 7731 in a haystack", "--", "it's here.txt", "notes/"]
SCRIPT = f"""
runs:
  - match: "^run-command"
    steps:
      - tool_calls:
          - name: laptop__run_command
            arguments: {{argv: {json.dumps(ARGV)}}}
      - {{expect: {{last_role: tool, last_is_error: true}}, text: "not run"}}
  - match: ".*"
    steps:
      - {{text: "echo"}}
"""


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    root = tmp_path_factory.mktemp("decision")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(root, script=script) as process:
        yield process


@pytest.fixture(scope="module")
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind) as process:
        yield process


@pytest.fixture(scope="module")
def reference_hand(
    mind: MindProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HandThread]:
    workspace = tmp_path_factory.mktemp("workspace")
    token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
    worker = HandThread(
        mind.address, token, build=lambda: build_reference_hand("laptop", workspace)
    )
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


def is_pending_approval(event: events_pb2.Event) -> bool:
    return event.HasField("approval_changed") and (
        event.approval_changed.decision == common_pb2.APPROVAL_DECISION_UNSPECIFIED
    )


def admin(mind: MindProcess, *args: str) -> str:
    """`tobe admin ARGS` as an operator runs it, answered by the running Mind."""
    result = subprocess.run(
        [sys.executable, "-m", "tobe", "admin", *args],
        env=mind.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


async def test_a_summary_mode_approval_of_run_command_shows_the_full_command_line(
    mind: MindProcess, face: FaceProcess, reference_hand: HandThread
) -> None:
    command_line = shlex.join(ARGV)
    client = await FaceClient.connect(face.address, mind.client_tokens["alice"], mode=SUMMARY)
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await client.command(create_conversation=face_pb2.CreateConversationCommand(key="p_cmd"))
        reply = await client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key="p_cmd",
                text="run-command please",
                idempotency_key=uuid.uuid4().hex,
            )
        )
        assert reply.HasField("send_chat"), reply
        request = (await client.wait_event(is_pending_approval)).approval_changed
    finally:
        await client.close()
    assert request.tool == "laptop__run_command"
    # Summary mode: no raw arguments, but the person sees exactly what they would approve.
    assert request.arguments_json == ""
    assert request.decision_text == command_line

    listed = json.loads(admin(mind, "approvals", "list", "--pending", "--json"))
    assert [(a["id"], a["decision_text"]) for a in listed] == [(request.id, command_line)]
    assert command_line in admin(mind, "approvals", "list", "--pending")
    assert (
        json.loads(admin(mind, "approvals", "show", request.id, "--json"))["decision_text"]
        == command_line
    )
    assert command_line in admin(mind, "approvals", "show", request.id).splitlines()

    gateway = Client(mind.address, mind.gateway_metadata)
    try:
        gateway.decide(request.id, common_pb2.APPROVAL_DECISION_DENY, reason="not now")
        gateway.wait_for(run_ended("p_cmd"))
    finally:
        gateway.close()
    assert reference_hand.executions == []
    # Shown to the person, never written to a log.
    for line in [*mind.output, *face.output]:
        assert "needle 7731" not in line
