"""End to end: a real Mind (Scripted model) and `tobe hand serve --mcp` hosting the real npm
MCP servers (everything, filesystem; stdio, in the sandbox) and a remote test server
(streamable HTTP with an auth header)."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, issue_token, running_mind
from remote_server import TOKEN, RemoteServer

from tests.remote.remote_processes import Chat, HandProcess, approval_requested, run_ended
from tobe.v1 import common_pb2, events_pb2, mind_pb2

pytestmark = pytest.mark.e2e

# How many tools the pinned everything server lists.
EVERYTHING_TOOLS = 13

SCRIPT = """
runs:
  - match: "^echo"
    steps:
      - tool_calls: [{name: laptop__everything__echo, arguments: {message: "hi there"}}]
      - expect: {last_role: tool, last_contains: "Echo: hi there"}
        text: "Echoed."
  - match: "^write"
    steps:
      - tool_calls:
          - name: laptop__files__write_file
            arguments: {path: "ROOT/note.txt", content: "written by the model"}
      - expect: {last_role: tool}
        text: "Written."
  - match: "^long"
    steps:
      - tool_calls:
          - name: laptop__everything__trigger_long_running_operation
            arguments: {duration: 2, steps: 4}
      - expect: {last_role: tool, last_contains: "completed"}
        text: "Done."
  - match: "^shout"
    steps:
      - tool_calls: [{name: laptop__remote__shout, arguments: {text: "quiet"}}]
      - expect: {last_role: tool, last_contains: "QUIET"}
        text: "Shouted."
  - match: "^refuse"
    steps:
      - tool_calls: [{name: laptop__remote__refuse, arguments: {}}]
      - expect: {last_role: tool, last_is_error: true, last_contains: "refuses"}
        text: "It refused."
  - match: "^picture"
    steps:
      - tool_calls: [{name: laptop__everything__get_tiny_image, arguments: {}}]
      - expect: {last_role: tool, last_contains: "image 1: image/png"}
        text: "A tiny picture."
  - match: "^wait"
    steps:
      - tool_calls: [{name: laptop__remote__wait_forever, arguments: {}}]
      - text: "Stopped."
"""


def _config(npm: Path, root: Path, url: str, token: str) -> dict[str, object]:
    sandbox = {"read_only": [str(npm)]}
    return {
        "mcpServers": {
            "everything": {
                "command": "node",
                "args": [str(npm / "@modelcontextprotocol/server-everything/dist/index.js")],
                "sandbox": sandbox,
            },
            "files": {
                "command": "node",
                "args": [
                    str(npm / "@modelcontextprotocol/server-filesystem/dist/index.js"),
                    str(root),
                ],
                "sandbox": sandbox | {"read_write": [str(root)]},
            },
            "remote": {"url": url, "headers": {"Authorization": f"Bearer {token}"}},
        }
    }


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("files-root")


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory, root: Path) -> Iterator[MindProcess]:
    base = tmp_path_factory.mktemp("mind")
    script = base / "script.yaml"
    script.write_text(SCRIPT.replace("ROOT", str(root)))
    with running_mind(base, script=script, clients=()) as process:
        yield process


def _hand(mind: MindProcess, base: Path, config: dict[str, object]) -> HandProcess:
    (base / "mcp.json").write_text(json.dumps(config))
    token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
    argv = [sys.executable, "-m", "tobe", "hand", "serve", "--mind", mind.address]
    argv += ["--name", "laptop", "--mcp", str(base / "mcp.json")]
    process = HandProcess(mind.address, token, base / "unused", argv=argv)
    process.start()
    return process


@pytest.fixture(scope="module")
def hand(
    mind: MindProcess,
    npm_servers: Path,
    root: Path,
    remote: RemoteServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HandProcess]:
    base = tmp_path_factory.mktemp("hand")
    process = _hand(mind, base, _config(npm_servers, root, remote.url, TOKEN))
    try:
        process.wait_attached(timeout=90)
        yield process
    finally:
        process.kill()


def _run(mind: MindProcess, key: str, text: str) -> list[events_pb2.Event]:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        return chat.turn(key, text)
    finally:
        chat.close()


def _payloads(events: list[events_pb2.Event], kind: str) -> list[object]:
    return [getattr(e, kind) for e in events if e.WhichOneof("payload") == kind]


def _tool_messages(events: list[events_pb2.Event]) -> list[common_pb2.Message]:
    return [
        m
        for m in _payloads(events, "message_appended")
        if isinstance(m, common_pb2.Message) and m.role == common_pb2.MESSAGE_ROLE_TOOL
    ]


def test_a_read_only_mcp_tool_runs_without_approval(mind: MindProcess, hand: HandProcess) -> None:
    events = _run(mind, "p_echo", "echo please")
    assert _payloads(events, "approval_changed") == []
    assert "Echo: hi there" in _tool_messages(events)[0].text
    assert events[-1].run_changed.state == common_pb2.RUN_STATE_COMPLETED


def test_a_writing_mcp_tool_asks_for_approval_before_it_runs(
    mind: MindProcess, hand: HandProcess, root: Path
) -> None:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_write")
        sent = chat.send("p_write", "write a note", "p_write")
        requested = chat.events_until(approval_requested)
        (approval,) = [
            e.approval_changed for e in requested if e.WhichOneof("payload") == "approval_changed"
        ]
        assert approval.tool == "laptop__files__write_file"
        assert not (root / "note.txt").exists()
        chat.approve(approval.id)
        chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    assert (root / "note.txt").read_text() == "written by the model"


def test_mcp_progress_notifications_reach_the_conversation(
    mind: MindProcess, hand: HandProcess
) -> None:
    events = _run(mind, "p_long", "long operation")
    progress = _payloads(events, "tool_progress")
    assert progress, "no progress arrived"
    assert all(isinstance(p, events_pb2.ToolProgress) and p.message for p in progress)
    assert events[-1].run_changed.state == common_pb2.RUN_STATE_COMPLETED


def test_an_image_an_mcp_tool_returns_reaches_the_conversation_as_an_image(
    mind: MindProcess, hand: HandProcess
) -> None:
    events = _run(mind, "p_picture", "picture please")
    (message,) = _tool_messages(events)
    assert [image.media_type for image in message.images] == ["image/png"]
    assert message.images[0].digest and message.images[0].size_bytes > 0
    assert events[-1].run_changed.state == common_pb2.RUN_STATE_COMPLETED


def test_a_remote_server_reached_with_its_header_serves_calls(
    mind: MindProcess, hand: HandProcess
) -> None:
    events = _run(mind, "p_shout", "shout it")
    assert "QUIET" in _tool_messages(events)[0].text
    assert events[-1].run_changed.state == common_pb2.RUN_STATE_COMPLETED


def test_an_mcp_error_result_is_the_tool_error_the_model_sees(
    mind: MindProcess, hand: HandProcess
) -> None:
    events = _run(mind, "p_refuse", "refuse please")
    changed = _payloads(events, "tool_changed")
    assert [c.status for c in changed if isinstance(c, common_pb2.ToolProjection)][-1] == (
        common_pb2.TOOL_STATUS_FAILED
    )
    assert events[-1].run_changed.state == common_pb2.RUN_STATE_COMPLETED


def test_cancelling_a_run_sends_mcp_cancellation_to_the_server(
    mind: MindProcess, hand: HandProcess, remote: RemoteServer
) -> None:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_wait")
        sent = chat.send("p_wait", "wait for it", "p_wait")
        assert remote.wait_for("waiting"), "the remote tool never started"
        chat.stub.CancelRun(
            mind_pb2.CancelRunRequest(on_behalf_of=chat.who(), conversation_key="p_wait"),
            metadata=chat.metadata,
            timeout=10,
        )
        chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    assert remote.wait_for("cancelled"), f"the server saw {remote.seen}"


def _declared(hand: HandProcess) -> list[int]:
    """The tool counts the Hand declared to the Mind (its hello, then each change), in order."""
    pattern = re.compile(r"attached as .*, (\d+) tools$|declared (\d+) tools to the Mind")
    found = (pattern.search(line) for line in hand.output)
    return [int(match.group(1) or match.group(2)) for match in found if match]


def _mind_counts(mind: MindProcess) -> list[int]:
    """The tool counts the Mind took from the Hand's `tools_changed`, in order."""
    pattern = re.compile(r"hand laptop changed its tools \((\d+) now\)")
    return [int(m.group(1)) for m in (pattern.search(line) for line in mind.output) if m]


def _withdrawn_then_back(counts: list[int], full: int) -> bool:
    return full - EVERYTHING_TOOLS in counts and counts[-1] == full


def test_a_killed_mcp_server_is_withdrawn_restarted_and_its_tools_come_back(
    mind: MindProcess, hand: HandProcess
) -> None:
    assert hand.process is not None
    full = max(_declared(hand))
    before = len(_declared(hand))
    seen_by_mind = len(_mind_counts(mind))
    everything = [
        child
        for child in psutil.Process(hand.process.pid).children(recursive=True)
        if any("server-everything" in part for part in child.cmdline())
    ]
    assert everything, "the everything server is not running"
    for process in everything:
        with contextlib.suppress(psutil.NoSuchProcess):  # a wrapper that already exited
            process.kill()
    eventually(
        lambda: _declared(hand)[before:],
        until=lambda counts: _withdrawn_then_back(counts, full),
        what="the everything server's tools to be withdrawn and declared again",
    )
    # The Mind itself took both changes: the tools were gone from it, then back.
    eventually(
        lambda: _mind_counts(mind)[seen_by_mind:],
        until=lambda counts: _withdrawn_then_back(counts, full),
        what="the Mind to take the withdrawal and the return of the tools",
    )
    events = _run(mind, "p_echo_again", "echo again")
    assert "Echo: hi there" in _tool_messages(events)[0].text


def test_a_remote_server_without_its_header_is_refused_and_named(
    mind: MindProcess, npm_servers: Path, root: Path, remote: RemoteServer, tmp_path: Path
) -> None:
    config = _config(npm_servers, root, remote.url, "wrong-token")
    process = _hand(mind, tmp_path, {"mcpServers": {"remote": config["mcpServers"]["remote"]}})  # type: ignore[index]
    try:
        process.wait_output("MCP server remote:", timeout=60)
        line = next(line for line in process.output if "MCP server remote:" in line)
        assert "401" in line and "wrong-token" not in line
    finally:
        process.kill()
    assert not any("wrong-token" in line for line in process.output)
