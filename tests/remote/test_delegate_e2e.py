"""Child runs (`delegate`) with a real `tobe mind serve`, the Scripted model and the marking
Hand: three children at once under one parent, each marking once on the Hand; their answers
reach the parent, which answers; a cancelled parent cancels its children; a child out of
budget says so; a Mind killed with SIGKILL while the children's Hand calls run ends parent
and children consistently, every mark made exactly once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from crash_checks import check_exactly_once, executions, read_store, start_marking_hand
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, issue_token, running_mind
from remote_processes import Chat, HandProcess
from sqlalchemy import create_engine, select

from mind.store.engine import sync_url
from mind.store.models import Delegation
from tobe.v1 import mind_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

ALLOW = {"TOBE_APPROVALS__EXTERNAL_SIDE_EFFECT": "allow"}
PARENT = "p_parent"
LABELS = ["a", "b", "c"]


def child_run(label: str, seconds: float) -> dict[str, Any]:
    """A child's script: mark `label` on the Hand, then answer with what the Hand said."""
    return {
        "match": f"^mark {label}$",
        "steps": [
            {
                "tool_calls": [
                    {"name": "laptop__mark", "arguments": {"label": label, "seconds": seconds}}
                ]
            },
            {
                "expect": {"last_role": "tool", "last_contains": f"marked {label}"},
                "text": f"Child {label} marked it.",
            },
        ],
    }


def script(seconds: float, max_turns: int | None = None) -> str:
    """The parent delegates `mark <label>` three times in one step, then answers only when
    every child's answer reached it."""
    budget = {"max_turns": max_turns} if max_turns else {}
    calls = [
        {
            "name": "delegate",
            "arguments": {"task": f"mark {label}", "tools": ["laptop__mark"], **budget},
        }
        for label in LABELS
    ]
    parent = {
        "match": "^delegate three$",
        "steps": [
            {"text": "Handing it on.", "tool_calls": calls},
            {
                "expect": {
                    "last_role": "tool",
                    "request_contains": [f"Child {label} marked it." for label in LABELS],
                },
                "text": "All three are marked.",
            },
        ],
    }
    over_budget = {
        "match": "^delegate three$",
        "steps": [
            {"tool_calls": calls},
            {"expect": {"request_contains": ["budget exhausted"]}, "text": "They ran out."},
        ],
    }
    runs = [over_budget if max_turns else parent, *(child_run(x, seconds) for x in LABELS)]
    return yaml.safe_dump({"runs": runs})


@pytest.fixture
def started(tmp_path: Path, workspace: Path) -> Iterator[Callable[..., tuple]]:
    """Start a Mind with the script, the marking Hand attached, and the parent conversation."""
    stack: list[Any] = []

    def start(
        seconds: float, max_turns: int | None = None, written: str | None = None
    ) -> tuple[MindProcess, Chat]:
        path = tmp_path / "script.yaml"
        path.write_text(written or script(seconds, max_turns))
        context = running_mind(tmp_path, script=path, clients=(), **ALLOW)
        mind = context.__enter__()
        stack.append(context)
        token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
        hand = start_marking_hand(mind, workspace, token)
        stack.append(hand)
        hand.wait_attached()
        chat = Chat(mind.address, mind.gateway_metadata)
        stack.append(chat)
        chat.create(PARENT)
        return mind, chat

    yield start
    for item in reversed(stack):
        if isinstance(item, Chat):
            item.close()
        elif isinstance(item, HandProcess):
            item.kill()
        else:
            item.__exit__(None, None, None)


def twice_script() -> str:
    """The parent hands on one task of three turns with a budget of two: the child marks
    `a` (slowly), then `b`, then would answer."""
    mark = "laptop__mark"
    parent = {
        "match": "^delegate twice$",
        "steps": [
            {
                "tool_calls": [
                    {
                        "name": "delegate",
                        "arguments": {"task": "mark twice", "tools": [mark], "max_turns": 2},
                    }
                ]
            },
            {"expect": {"last_role": "tool"}, "text": "The child ended."},
        ],
    }
    child = {
        "match": "^mark twice$",
        "steps": [
            {"tool_calls": [{"name": mark, "arguments": {"label": "a", "seconds": 4.0}}]},
            {"tool_calls": [{"name": mark, "arguments": {"label": "b", "seconds": 0.0}}]},
            {"text": "Marked both."},
        ],
    }
    return yaml.safe_dump({"runs": [parent, child]})


def delegations(mind: MindProcess) -> list[Delegation]:
    engine = create_engine(sync_url(mind.url))
    try:
        with engine.connect() as connection:
            return list(connection.execute(select(Delegation)).all())
    finally:
        engine.dispose()


def marks_running(mind: MindProcess) -> bool:
    """Every child's Hand call has a task the Hand accepted."""
    tasks = read_store(mind).tasks
    return len(tasks) == 3 and all(task.state == "accepted" for task in tasks)


def settled(mind: MindProcess, answer: str) -> bool:
    store = read_store(mind)
    return answer in store.answers(PARENT) and all(r.state != "running" for r in store.runs)


def check_consistent(mind: MindProcess, workspace: Path) -> None:
    """Each mark ran once, every child succeeded with its answer, and the parent's delegate
    calls ended with those answers."""
    store = read_store(mind)
    check_exactly_once(store, executions(workspace))
    assert executions(workspace) == {label: 1 for label in LABELS}
    rows = delegations(mind)
    assert sorted(row.state for row in rows) == ["succeeded"] * 3
    assert sorted(row.result for row in rows) == [f"Child {x} marked it." for x in LABELS]
    calls = [p for p in store.projections if p.tool == "delegate"]
    assert sorted(p.status for p in calls) == ["succeeded"] * 3
    assert store.answers(PARENT).count("All three are marked.") == 1
    assert all(run.state != "running" for run in store.runs)


def test_three_children_run_at_once_and_their_answers_reach_the_parent(
    started: Callable[..., tuple], workspace: Path
) -> None:
    mind, chat = started(seconds=2.0)
    chat.send(PARENT, "delegate three", "k1")
    eventually(
        lambda: settled(mind, "All three are marked."),
        90,
        what="the parent's answer",
        context=lambda: "\n".join(mind.output[-60:]),
    )
    check_consistent(mind, workspace)
    marks = [p for p in read_store(mind).projections if p.tool == "laptop__mark"]
    assert len({p.conversation_key for p in marks}) == 3
    assert max(p.admitted_at for p in marks) < min(p.finished_at for p in marks), (
        "the children did not run at once"
    )
    listed = chat.stub.ListConversations(
        mind_pb2.ListConversationsRequest(on_behalf_of=chat.who()),
        metadata=chat.metadata,
        timeout=10,
    )
    assert [c.key for c in listed.conversations] == [PARENT]


def test_a_mind_killed_while_the_children_mark_ends_parent_and_children_once(
    started: Callable[..., tuple], workspace: Path
) -> None:
    mind, chat = started(seconds=4.0)
    chat.send(PARENT, "delegate three", "k1")
    eventually(lambda: marks_running(mind), 60, what="the three children's marks to run")
    address = mind.address
    mind.kill()
    mind.start(address)
    eventually(lambda: settled(mind, "All three are marked."), 120, what="the parent's answer")
    check_consistent(mind, workspace)


def test_cancelling_the_parent_cancels_its_children(
    started: Callable[..., tuple], workspace: Path
) -> None:
    mind, chat = started(seconds=60.0)
    chat.send(PARENT, "delegate three", "k1")
    eventually(lambda: marks_running(mind), 60, what="the three children's marks to run")
    chat.stub.CancelRun(
        mind_pb2.CancelRunRequest(on_behalf_of=chat.who(), conversation_key=PARENT),
        metadata=chat.metadata,
        timeout=30,
    )
    eventually(
        lambda: all(r.state != "running" for r in read_store(mind).runs),
        30,
        what="every run to end",
        context=lambda: "\n".join(mind.output[-60:]),
    )
    store = read_store(mind)
    assert sorted(row.state for row in delegations(mind)) == ["cancelled"] * 3
    children = [r for r in store.runs if r.conversation_key != PARENT]
    assert sorted(r.state for r in children) == ["cancelled"] * 3
    assert all("parent run was cancelled" in r.reason for r in children)
    calls = [p for p in store.projections if p.tool == "delegate"]
    assert sorted(p.status for p in calls) == ["cancelled"] * 3
    assert executions(workspace) == {label: 1 for label in LABELS}


def test_a_child_out_of_turns_tells_its_parent_the_budget_is_exhausted(
    started: Callable[..., tuple], workspace: Path
) -> None:
    mind, chat = started(seconds=0.0, max_turns=1)
    chat.send(PARENT, "delegate three", "k1")
    eventually(lambda: settled(mind, "They ran out."), 90, what="the parent's answer")
    rows = delegations(mind)
    assert sorted(row.state for row in rows) == ["failed"] * 3
    assert all("budget exhausted: 1 turns" in row.result for row in rows)
    assert executions(workspace) == {label: 1 for label in LABELS}


def test_a_child_continued_after_a_crash_gets_only_what_is_left_of_its_budget(
    started: Callable[..., tuple], workspace: Path
) -> None:
    mind, chat = started(seconds=0.0, written=twice_script())
    chat.send(PARENT, "delegate twice", "k1")
    eventually(
        lambda: [t.state for t in read_store(mind).tasks] == ["accepted"],
        60,
        what="the child's first mark to run",
    )
    address = mind.address
    mind.kill()
    mind.start(address)
    eventually(lambda: settled(mind, "The child ended."), 90, what="the parent's answer")
    (row,) = delegations(mind)
    assert (row.state, row.turns_used) == ("failed", 2)
    assert "budget exhausted: 2 turns" in row.result
    assert executions(workspace) == {"a": 1, "b": 1}


def asking_script() -> str:
    """The parent hands on one mark, which asks for approval."""
    parent = {
        "match": "^delegate one$",
        "steps": [
            {"tool_calls": [{"name": "delegate", "arguments": {"task": "mark a"}}]},
            {"expect": {"last_contains": "Child a marked it."}, "text": "Marked after asking."},
        ],
    }
    return yaml.safe_dump({"runs": [parent, child_run("a", 0.0)]})


def test_a_childs_approval_is_asked_and_decided_in_the_parent_conversation(
    tmp_path: Path, workspace: Path
) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(asking_script())
    with running_mind(tmp_path, script=path, clients=()) as mind:
        token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
        hand = start_marking_hand(mind, workspace, token)
        chat = Chat(mind.address, mind.gateway_metadata)
        try:
            hand.wait_attached()
            chat.create(PARENT)
            chat.send(PARENT, "delegate one", "k1")

            def asked(events: list[Any]) -> bool:
                return any(
                    e.WhichOneof("payload") == "approval_changed"
                    and e.conversation_key == PARENT
                    and e.approval_changed.delegate_call_id
                    for e in events
                )

            events = chat.events_until(asked)
            (approval,) = [
                e.approval_changed for e in events if e.WhichOneof("payload") == "approval_changed"
            ]
            (call,) = [p for p in read_store(mind).projections if p.tool == "delegate"]
            assert approval.delegate_call_id == call.tool_call_id
            assert approval.conversation_key.startswith("p_sub_")
            snapshot = chat.stub.GetSnapshot(
                mind_pb2.GetSnapshotRequest(on_behalf_of=chat.who(), conversation_key=PARENT),
                metadata=chat.metadata,
                timeout=10,
            )
            assert [a.id for a in snapshot.pending_approvals] == [approval.id]
            chat.approve(approval.id)
            eventually(lambda: settled(mind, "Marked after asking."), 60, what="the answer")
            assert executions(workspace) == {"a": 1}
        finally:
            chat.close()
            hand.kill()
