"""A tool call executes at most once across Mind crashes and stops, and the conversation gets
the result of the work that happened on the Hand (real `tobe mind serve` and a real Hand)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from crash_checks import (
    check_exactly_once,
    executions,
    mark_script,
    read_store,
    start_marking_hand,
)
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, issue_token, running_mind
from remote_processes import Chat, HandProcess

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

ALLOW = {"TOBE_APPROVALS__EXTERNAL_SIDE_EFFECT": "allow"}
ASK: dict[str, str] = {}  # the default policy asks a person


@pytest.fixture
def started(tmp_path: Path, workspace: Path) -> Iterator[Callable[[dict[str, str]], tuple]]:
    """Start a Mind with `mark one` scripted, and the marking Hand attached to it."""
    stack: list = []

    def start(policy: dict[str, str]) -> tuple[MindProcess, HandProcess, Chat]:
        script = tmp_path / "script.yaml"
        script.write_text(mark_script(["one"], seconds=3.0))
        context = running_mind(tmp_path, script=script, clients=(), **policy)
        mind = context.__enter__()
        stack.append(context)
        token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
        hand = start_marking_hand(mind, workspace, token)
        stack.append(hand)
        hand.wait_attached()
        chat = Chat(mind.address, mind.gateway_metadata)
        stack.append(chat)
        chat.create("p_once")
        return mind, hand, chat

    yield start
    for item in reversed(stack):
        if isinstance(item, Chat):
            item.close()
        elif isinstance(item, HandProcess):
            item.kill()
        else:
            item.__exit__(None, None, None)


def task_state(mind: MindProcess) -> str:
    tasks = read_store(mind).tasks
    return tasks[0].state if tasks else ""


def pending_approval(mind: MindProcess) -> str:
    pending = [a.id for a in read_store(mind).approvals if a.decision is None]
    return pending[0] if pending else ""


def stop_mind(mind: MindProcess, how: str) -> None:
    """Kill -9 (a crash) or SIGTERM (a stop), then start again on the same address."""
    address = mind.address
    if how == "kill":
        mind.kill()
    else:
        assert mind.terminate() == 0
    mind.start(address)


def answered(mind: MindProcess) -> bool:
    """The answer built on the Hand's result is stored and its run has ended."""
    store = read_store(mind)
    ended = all(run.state != "running" for run in store.runs)
    return "Marked one." in store.answers("p_once") and ended


def check_no_cancel(hand: HandProcess) -> None:
    """A stop leaves the task running: the Hand never got a `cancel` (the SDK logs each)."""
    cancels = [line for line in hand.output if "cancelling task" in line]
    assert not cancels, f"the Hand was asked to cancel: {cancels}"


def check_one_execution_with_its_result(mind: MindProcess, workspace: Path) -> None:
    eventually(lambda: answered(mind), 90, what="the answer built on the Hand's result")
    store = read_store(mind)
    check_exactly_once(store, executions(workspace))
    assert executions(workspace) == {"one": 1}
    ((task,),) = [store.tasks]
    assert task.state == "succeeded"
    results = [m.text for m in store.messages if m.role == "tool"]
    assert results == ["marked one"]
    assert store.answers("p_once").count("Marked one.") == 1


@pytest.mark.parametrize("how", ["kill", "term"])
def test_a_hand_result_after_a_mind_stop_reaches_the_conversation_once(
    started: Callable, workspace: Path, how: str
) -> None:
    """Unapproved call (policy allow): the Mind dies while the Hand runs the task."""
    mind, hand, chat = started(ALLOW)
    chat.send("p_once", "mark one", "k1")
    eventually(
        lambda: task_state(mind),
        until=lambda state: state == "accepted",
        what="the task to be accepted",
    )
    stop_mind(mind, how)
    check_one_execution_with_its_result(mind, workspace)
    check_no_cancel(hand)


@pytest.mark.parametrize("how", ["kill", "term"])
def test_an_approved_call_runs_once_when_the_mind_dies_during_its_task(
    started: Callable, workspace: Path, how: str
) -> None:
    """Decision committed before the kill; the continuation takes the running task's result."""
    mind, _hand, chat = started(ASK)
    chat.send("p_once", "mark one", "k1")
    eventually(lambda: pending_approval(mind), what="the approval request")
    chat.approve(pending_approval(mind))
    eventually(
        lambda: task_state(mind),
        until=lambda state: state == "accepted",
        what="the task to be accepted",
    )
    stop_mind(mind, how)
    check_one_execution_with_its_result(mind, workspace)


def test_a_call_approved_after_a_restart_runs_once_when_the_mind_dies_again(
    started: Callable, workspace: Path
) -> None:
    """Decision committed after the restart, then a second crash during the task."""
    mind, _hand, chat = started(ASK)
    chat.send("p_once", "mark one", "k1")
    eventually(lambda: pending_approval(mind), what="the approval request")
    stop_mind(mind, "kill")
    chat.approve(pending_approval(mind))
    eventually(
        lambda: task_state(mind),
        60,
        until=lambda state: state == "accepted",
        what="the task accepted",
    )
    stop_mind(mind, "kill")
    check_one_execution_with_its_result(mind, workspace)
