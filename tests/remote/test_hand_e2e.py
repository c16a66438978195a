"""End to end with real processes: `tobe mind serve` (Scripted model) and `tobe hand serve`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, issue_token, running_mind
from helpers.process_tree import Running, descendants, kill_all, naming, still_running
from remote_processes import Chat, HandProcess, approval_requested, run_ended
from sqlalchemy import create_engine, select

from mind.store.engine import sync_url
from mind.store.models import Task, TaskTransition
from tobe.v1 import common_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

SCRIPT = """
runs:
  - match: "^echo"
    steps:
      - text: "Asking the laptop."
        tool_calls:
          - name: laptop__run_command
            arguments: {argv: ["echo", "hello from the hand"]}
      - expect: {last_role: tool, last_contains: "hello from the hand"}
        text: "The laptop said hello."
  - match: "^sleep"
    steps:
      - text: "This takes a while."
        tool_calls:
          - name: laptop__run_command
            arguments: {argv: ["sleep", "4"]}
      - expect: {last_role: tool}
        text: "Finished waiting."
  - match: "^build"
    steps:
      - text: "Starting the build in the background."
        tool_calls:
          - name: laptop__build
            arguments: {target: "docs"}
      - expect: {last_role: tool, last_contains: "started"}
        text: "The build runs; I will tell you when it is done."
  - match: "^hang"
    steps:
      - text: "This never ends."
        tool_calls:
          - name: laptop__run_command
            arguments: {argv: ["sleep", "600"]}
      - expect: {last_role: tool, last_is_error: true, last_contains: "lost"}
        text: "The laptop lost it."
"""


@pytest.fixture
def approvals() -> dict[str, str]:
    """Commands ask for approval by default; most tests let them run without a person."""
    return {"TOBE_APPROVALS__EXTERNAL_SIDE_EFFECT": "allow"}


@pytest.fixture
def mind(tmp_path: Path, approvals: dict[str, str]) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script, clients=(), **approvals) as process:
        yield process


@pytest.fixture
def hands(mind: MindProcess, workspace: Path) -> Iterator[list[HandProcess]]:
    started: list[HandProcess] = []
    try:
        yield started
    finally:
        for hand in started:
            hand.kill()


def start_hand(
    mind: MindProcess,
    workspace: Path,
    hands: list[HandProcess],
    token: str,
    *options: str,
    env: dict[str, str] | None = None,
) -> HandProcess:
    argv = ["--allow", "echo", "--allow", "sleep", *options]
    hand = HandProcess(mind.address, token, workspace, argv, extra_env=env or {})
    hand.start()
    hands.append(hand)
    return hand


def hand_token(mind: MindProcess) -> str:
    # The Hand serves alice, who owns the conversations these tests drive.
    return issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])


def tasks(mind: MindProcess) -> list[tuple[Task, list[TaskTransition]]]:
    engine = create_engine(sync_url(mind.url))
    try:
        with engine.connect() as connection:
            rows = connection.execute(select(Task)).all()
            steps = connection.execute(select(TaskTransition).order_by(TaskTransition.id)).all()
    finally:
        engine.dispose()
    return [(row, [s for s in steps if s.task_id == row.id]) for row in rows]


def task_state(mind: MindProcess) -> str:
    found = tasks(mind)
    return found[0][0].state if found else ""


def terminal_states(mind: MindProcess) -> list[str]:
    ((_, steps),) = tasks(mind)
    return [s.to_state for s in steps if s.terminal]


@pytest.mark.parametrize("approvals", [{}])
@pytest.mark.pg_e2e
def test_model_calls_a_hand_tool_and_sees_admission_progress_and_result(
    mind: MindProcess, workspace: Path, hands: list[HandProcess]
) -> None:
    """With the default policy a person approves the call; the offer carries the digest."""
    start_hand(mind, workspace, hands, hand_token(mind)).wait_attached()
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_e2e")
        sent = chat.send("p_e2e", "echo please", "k1")
        requested = chat.events_until(approval_requested)
        approval = [
            e.approval_changed for e in requested if e.WhichOneof("payload") == "approval_changed"
        ][0]
        assert approval.tool == "laptop__run_command" and approval.arguments_digest
        chat.approve(approval.id)
        events = chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    mine = [e for e in events if e.conversation_key == "p_e2e"]
    tools = [e.tool_changed for e in mine if e.WhichOneof("payload") == "tool_changed"]
    progress = [e.tool_progress for e in mine if e.WhichOneof("payload") == "tool_progress"]
    assert [t.status for t in tools] == [
        common_pb2.TOOL_STATUS_RUNNING,
        common_pb2.TOOL_STATUS_SUCCEEDED,
    ]
    assert tools[0].tool == "laptop__run_command" and tools[0].hand_id.startswith("h_")
    # Progress is ephemeral (it may be dropped); what arrives is the Hand's own report.
    assert {p.message for p in progress} <= {"running echo"}
    result = [
        e.message_appended
        for e in mine
        if e.WhichOneof("payload") == "message_appended"
        and e.message_appended.role == common_pb2.MESSAGE_ROLE_TOOL
    ]
    assert json.loads(result[0].text)["stdout"] == "hello from the hand\n"
    assert mine[-1].run_changed.state == common_pb2.RUN_STATE_COMPLETED
    assert terminal_states(mind) == ["succeeded"]


def test_hand_killed_mid_task_and_restarted_ends_the_task_lost_once(
    mind: MindProcess, workspace: Path, hands: list[HandProcess]
) -> None:
    token = hand_token(mind)
    first = start_hand(mind, workspace, hands, token)
    first.wait_attached()
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_e2e")
        sent = chat.send("p_e2e", "hang on", "k1")
        eventually(
            lambda: task_state(mind),
            until=lambda state: state == "accepted",
            what="the task to be accepted",
        )
        first.kill()
        start_hand(mind, workspace, hands, token).wait_attached()
        events = chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    assert terminal_states(mind) == ["lost"]
    answers = [
        e.message_appended.text for e in events if e.WhichOneof("payload") == "message_appended"
    ]
    assert answers[-1] == "The laptop lost it."


# A bwrap that starts a command only once the file `go` exists (the Hand's start-up probe at
# once): as if the Hand died before bwrap asked the kernel to end it with its parent.
HELD_BWRAP = """#!/bin/sh
case " $* " in
  *" -- sleep "*) touch {held}; while [ ! -e {go} ]; do sleep 0.05; done ;;
esac
exec {bwrap} "$@"
"""


@pytest.mark.parametrize("confinement", ["sandboxed", "sandbox-starting", "unconfined"])
def test_a_killed_hand_leaves_no_command_of_its_own_running(
    mind: MindProcess, workspace: Path, hands: list[HandProcess], confinement: str, tmp_path: Path
) -> None:
    """A Hand that dies (kill -9, out of memory) takes its commands along, whatever they had
    started meanwhile (bwrap, the sandbox's processes), even a sandbox still being set up."""
    options: tuple[str, ...] = ()
    env: dict[str, str] = {}
    held, go = tmp_path / "held", tmp_path / "go"
    if confinement == "unconfined":
        options, env = ("--allow-unconfined-commands",), {"TOBE_HAND__BWRAP": "/nonexistent"}
    if confinement == "sandbox-starting":
        wrapper = tmp_path / "held-bwrap"
        bwrap = shutil.which("bwrap")
        wrapper.write_text(HELD_BWRAP.format(held=held, go=go, bwrap=bwrap))
        wrapper.chmod(0o755)
        env = {"TOBE_HAND__BWRAP": str(wrapper)}
    hand = start_hand(mind, workspace, hands, hand_token(mind), *options, env=env)
    hand.wait_attached()
    assert hand.process is not None
    pid = hand.process.pid
    chat = Chat(mind.address, mind.gateway_metadata)
    command: list[Running] = []

    def survivors() -> list[Running]:
        # The command's processes seen under the Hand, and wherever bwrap ended up (its command
        # line binds the workspace), with everything below it.
        return still_running(command) + naming(str(workspace))

    try:
        chat.create("p_e2e")
        chat.send("p_e2e", "hang on", "k1")
        if confinement == "sandbox-starting":
            eventually(held.exists, 60, what="bwrap to be started and held")
        else:
            eventually(
                lambda: descendants(pid),
                60,
                until=lambda found: any(p.argv == ("sleep", "600") for p in found),
                what="the Hand to run `sleep 600`",
            )
        command = descendants(pid)
        hand.kill()
        go.touch()
        eventually(
            survivors,
            60,
            until=lambda left: not left,
            what="every process of the command to end with the Hand",
        )
    finally:
        chat.close()
        go.touch()
        kill_all(survivors())


def test_mind_killed_mid_task_and_restarted_accepts_the_result_exactly_once(
    mind: MindProcess, workspace: Path, hands: list[HandProcess]
) -> None:
    address = mind.address
    hand = start_hand(mind, workspace, hands, hand_token(mind))
    hand.wait_attached()
    chat = Chat(address, mind.gateway_metadata)
    try:
        chat.create("p_e2e")
        chat.send("p_e2e", "sleep a bit", "k1")
        eventually(
            lambda: task_state(mind),
            until=lambda state: state == "accepted",
            what="the task to be accepted",
        )
    finally:
        chat.close()
    mind.restart(same_address=True)
    assert mind.address == address
    hand.wait_attached(2)
    eventually(
        lambda: task_state(mind),
        60,
        until=lambda state: state == "succeeded",
        what="the result",
    )
    ((task, steps),) = tasks(mind)
    assert [s.to_state for s in steps] == ["offered", "accepted", "succeeded"]
    assert json.loads(task.output)["exit_code"] == 0


def test_wrong_credential_makes_the_hand_exit_unauthenticated(
    mind: MindProcess, workspace: Path, hands: list[HandProcess]
) -> None:
    hand = start_hand(mind, workspace, hands, "tobe_0000000000000000_wrongwrongwrongwrong")
    assert hand.wait_exit() == 1
    eventually(
        lambda: hand.output,
        until=lambda output: any("UNAUTHENTICATED" in line for line in output),
        what="UNAUTHENTICATED in the Hand's output",
    )


CUSTOM_HAND = """
import asyncio, logging, os, sys

from hand import Hand

logging.basicConfig(level=logging.INFO)
hand = Hand("laptop")


@hand.tool(background=True)
async def build(target: str) -> str:
    \"\"\"Build a target; takes a while, so it runs in the background.\"\"\"
    await asyncio.sleep(0.5)
    return f"built {target}"


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
"""


def test_background_task_result_reaches_the_conversation_as_a_note(
    mind: MindProcess, workspace: Path, hands: list[HandProcess], tmp_path: Path
) -> None:
    program = tmp_path / "custom_hand.py"
    program.write_text(CUSTOM_HAND)
    hand = HandProcess(mind.address, hand_token(mind), workspace, program=program)
    hand.start()
    hands.append(hand)
    hand.wait_attached()
    chat = Chat(mind.address, mind.gateway_metadata)

    def note_arrived(events: list) -> bool:
        return any(
            e.WhichOneof("payload") == "message_appended"
            and e.message_appended.role == common_pb2.MESSAGE_ROLE_NOTE
            for e in events
        )

    try:
        chat.create("p_e2e")
        sent = chat.send("p_e2e", "build the docs", "k1")
        events = chat.events_until(lambda evs: run_ended(sent.run_id)(evs) and note_arrived(evs))
    finally:
        chat.close()
    messages = [e.message_appended for e in events if e.WhichOneof("payload") == "message_appended"]
    note = [m for m in messages if m.role == common_pb2.MESSAGE_ROLE_NOTE][0]
    assert "laptop__build" in note.text and "built docs" in note.text
    assert terminal_states(mind) == ["succeeded"]
