"""A tool call reaches a Hand attached to another Mind on the same PostgreSQL database (issue
40): real Mind processes, a real Hand process, a real server.

Mind a owns the conversation; the Hand dialled mind b. The call runs once on the Hand, its
result lands in a's conversation, and its progress reaches subscribers of both Minds. An
approval is decided through either Mind. When a is killed while the Hand runs the task, b takes
the conversation over and the call ends once; when b is killed, it restarts on its address,
the Hand comes back to it, and the call still ends once.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, issue_token
from helpers.shared_database import SharedDatabase, shared_database
from helpers.store_backend import rows

from tobe.v1 import events_pb2

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remote"))
from remote_processes import Chat, HandProcess

pytestmark = pytest.mark.e2e
KEY = "p_hands"

# `peek` is read-only (allowed without asking), `mark` has an external side effect (the
# default policy asks a person). Each appends its label to `executions.log` (fsync'd) before
# it works, reporting progress, for `seconds`.
HAND = '''
import asyncio, logging, os, sys
from pathlib import Path

from hand import Hand, report_progress

logging.basicConfig(level=logging.INFO)
hand = Hand("laptop")
LOG = Path(__file__).with_name("executions.log")


async def record(label: str, seconds: float) -> str:
    with LOG.open("a") as log:
        log.write(label + "\\n")
        log.flush()
        os.fsync(log.fileno())
    steps = max(1, int(seconds / 0.2))
    for step in range(steps):
        report_progress(f"{label} step {step}", step / steps)
        await asyncio.sleep(seconds / steps)
    return f"marked {label}"


@hand.tool(effect="external_side_effect")
async def mark(label: str, seconds: float = 0.0) -> str:
    """Record one execution under `label`, then take `seconds`."""
    return await record(label, seconds)


@hand.tool(effect="read_only")
async def peek(label: str, seconds: float = 0.0) -> str:
    """Record one execution under `label`, then take `seconds` (read-only)."""
    return await record(label, seconds)


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
'''


def script(calls: dict[str, tuple[str, float]]) -> str:
    """`<label>` calls the Hand's tool once, then answers `Marked <label>.` only if the tool
    result it got back says so."""
    runs = [
        {
            "match": f"^{label}$",
            "steps": [
                {
                    "text": f"Marking {label}.",
                    "tool_calls": [
                        {
                            "name": f"laptop__{tool}",
                            "arguments": {"label": label, "seconds": seconds},
                        }
                    ],
                },
                {
                    "expect": {"last_role": "tool", "last_contains": f"marked {label}"},
                    "text": f"Marked {label}.",
                },
            ],
        }
        for label, (tool, seconds) in calls.items()
    ]
    return yaml.safe_dump({"runs": runs})


SCRIPT = script({"one": ("peek", 2.0), "two": ("mark", 0.5), "three": ("peek", 5.0)})


@dataclass
class Cluster:
    database: SharedDatabase
    a: MindProcess
    b: MindProcess
    hand: HandProcess
    workspace: Path

    def chat(self, mind: MindProcess) -> Chat:
        return Chat(mind.address, mind.gateway_metadata)

    def executions(self) -> Counter[str]:
        log = self.workspace.parent / "executions.log"
        return Counter(log.read_text().split()) if log.exists() else Counter()

    def tasks(self) -> list[tuple[str, str, int]]:
        """(tool call, state, attempt) of every task."""
        found = rows(self.database.url, "SELECT tool_call_id, state, attempt FROM tasks")
        return [(call, state, attempt) for call, state, attempt in found]

    def answers(self) -> list[str]:
        found = rows(
            self.database.url,
            "SELECT text FROM messages WHERE conversation_key = ? AND role = 'assistant' "
            "ORDER BY id",
            KEY,
        )
        return [text for (text,) in found]

    def owner(self) -> str:
        [(node_id,)] = rows(
            self.database.url,
            "SELECT node_id FROM conversation_leases WHERE conversation_key = ?",
            KEY,
        )
        return str(node_id)

    def check_ran_once(self, label: str) -> None:
        """`label` executed once on the Hand, its one task succeeded, its answer stored once,
        every tool projection agrees with its task and no run is left running."""
        eventually(
            lambda: self.answers().count(f"Marked {label}.") == 1 and not self.running(),
            45,
            what=f"the answer built on the Hand's result of {label}",
            context=lambda: "\n".join(self.a.output[-40:] + ["----"] + self.b.output[-60:]),
        )
        assert self.executions()[label] == 1
        per_call = Counter(call for call, _state, _attempt in self.tasks())
        assert set(per_call.values()) == {1}
        projections = dict(
            rows(self.database.url, "SELECT tool_call_id, status FROM tool_projections")
        )
        for call, state, _attempt in self.tasks():
            assert state == "succeeded"
            assert projections[call] == "succeeded"
        results = rows(
            self.database.url,
            "SELECT text FROM messages WHERE role = 'tool' AND text = ?",
            f"marked {label}",
        )
        assert len(results) == 1

    def running(self) -> list[str]:
        return [
            r for (r,) in rows(self.database.url, "SELECT id FROM runs WHERE state = 'running'")
        ]

    def task_state(self) -> str:
        states = [state for _call, state, _attempt in self.tasks()]
        return states[-1] if states else ""

    def pending_approval(self) -> str:
        found = rows(self.database.url, "SELECT id FROM approvals WHERE decision IS NULL")
        return str(found[0][0]) if found else ""

    def hand_on(self) -> str:
        found = rows(self.database.url, "SELECT node_id FROM attached_hands WHERE name = 'laptop'")
        return str(found[0][0]) if found else ""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Minds a and b on one database (a owns `KEY`), the Hand attached to b."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script_file = tmp_path / "script.yaml"
    script_file.write_text(SCRIPT, encoding="utf-8")
    with shared_database() as database:
        a, b = (
            database.mind(
                tmp_path / name,
                script_file,
                TOBE_MIND__NODE_ID=name,
                TOBE_MIND__LEASE_SECONDS="2",
            )
            for name in ("mind-a", "mind-b")
        )
        hand: HandProcess | None = None
        try:
            a.start()
            b.start()
            token = issue_token(
                database.url, kind="hand", principal="laptop", scopes=["serve:alice"]
            )
            program = tmp_path / "progress_hand.py"
            program.write_text(HAND)
            hand = HandProcess(b.address, token, workspace, program=program)
            hand.start()
            hand.wait_attached()
            made = Cluster(database, a, b, hand, workspace)
            eventually(made.hand_on, what="the Hand's attachment in the shared store")
            chat = made.chat(a)
            try:
                chat.create(KEY)
            finally:
                chat.close()
            yield made
        finally:
            if hand is not None:
                hand.kill()
            for mind in (a, b):
                if mind.process is not None and mind.process.poll() is None:
                    mind.process.send_signal(signal.SIGCONT)
                mind.kill()


def progress_seen(chat: Chat, seen: list[events_pb2.ToolProgress]) -> threading.Thread:
    """Follow `chat`'s Mind until it streams a tool progress of `KEY` (kept in `seen`)."""

    def done(events: list[events_pb2.Event]) -> bool:
        found = [
            e.tool_progress
            for e in events
            if e.conversation_key == KEY and e.WhichOneof("payload") == "tool_progress"
        ]
        seen.extend(found)
        return bool(found)

    def follow() -> None:
        try:
            chat.events_until(done, timeout=30)
        finally:
            chat.close()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    return thread


def test_a_call_on_a_hand_of_another_mind_runs_once_and_both_minds_stream_its_progress(
    cluster: Cluster,
) -> None:
    seen_on_a: list[events_pb2.ToolProgress] = []
    seen_on_b: list[events_pb2.ToolProgress] = []
    followers = [
        progress_seen(cluster.chat(cluster.a), seen_on_a),
        progress_seen(cluster.chat(cluster.b), seen_on_b),
    ]
    chat = cluster.chat(cluster.a)
    try:
        chat.send(KEY, "one", "k1")
    finally:
        chat.close()
    cluster.check_ran_once("one")
    assert cluster.owner() == "mind-a"
    assert cluster.hand_on() == "mind-b"
    for follower in followers:
        follower.join(30)
    assert seen_on_a and seen_on_b
    for seen in (seen_on_a, seen_on_b):
        assert all(p.message.startswith("one step") for p in seen)


def test_an_approval_decided_through_the_other_mind_lets_the_call_run_once(
    cluster: Cluster,
) -> None:
    chat_a, chat_b = cluster.chat(cluster.a), cluster.chat(cluster.b)
    try:
        chat_a.send(KEY, "two", "k2")
        approval = eventually(cluster.pending_approval, what="the approval request")
        assert cluster.executions()["two"] == 0
        chat_b.approve(approval)  # forwarded to mind a, which owns the conversation
        cluster.check_ran_once("two")
    finally:
        chat_a.close()
        chat_b.close()
    assert cluster.owner() == "mind-a"


def test_the_owner_killed_while_the_hand_runs_the_task_lets_the_other_mind_end_it_once(
    cluster: Cluster,
) -> None:
    chat = cluster.chat(cluster.a)
    try:
        chat.send(KEY, "three", "k3")
    finally:
        chat.close()
    eventually(cluster.task_state, until=lambda s: s == "accepted", what="the task accepted")
    cluster.a.kill()
    cluster.check_ran_once("three")
    assert cluster.owner() == "mind-b"


def test_the_hands_mind_killed_while_the_hand_runs_the_task_ends_it_once_when_it_returns(
    cluster: Cluster,
) -> None:
    chat = cluster.chat(cluster.a)
    try:
        chat.send(KEY, "three", "k3")
    finally:
        chat.close()
    eventually(cluster.task_state, until=lambda s: s == "accepted", what="the task accepted")
    address = cluster.b.address
    cluster.b.kill()
    cluster.b.start(address)
    cluster.hand.wait_attached(2)
    cluster.check_ran_once("three")
    assert cluster.owner() == "mind-a"
    [(_call, _state, attempt)] = cluster.tasks()
    assert attempt == 1
