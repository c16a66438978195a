"""A Hand that records every execution, and the checks that hold after any number of Mind
crashes: each call executed at most once, tool projections agree with their tasks, no run is
left running.

The marking Hand's tools append their `label` to `executions.log` beside its program (fsync'd
before they sleep), so a second execution of one call cannot go unseen: `mark` has an external
side effect (the default policy asks a person), `peek` is read-only (allowed without asking).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from helpers.mind_process import MindProcess
from remote_processes import HandProcess
from sqlalchemy import create_engine, select

from mind.store.engine import sync_url
from mind.store.models import Approval, Message, Run, Task, ToolProjection

MARKING_HAND = '''
import asyncio, logging, os, sys
from pathlib import Path

from hand import Hand

logging.basicConfig(level=logging.INFO)
hand = Hand("laptop")
LOG = Path(__file__).with_name("executions.log")


async def record(label: str, seconds: float) -> str:
    with LOG.open("a") as log:
        log.write(label + "\\n")
        log.flush()
        os.fsync(log.fileno())
    await asyncio.sleep(seconds)
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

# Terminal status a tool projection must show for each task terminal.
PROJECTION_OF_TASK = {
    "succeeded": "succeeded",
    "failed": "failed",
    "rejected": "denied",
    "cancelled": "cancelled",
    "timed_out": "failed",
    "lost": "failed",
}


def mark_script(
    labels: list[str], seconds: float, tool: Callable[[str], str] = lambda _: "mark"
) -> str:
    """A Scripted-provider script: `mark <label>` calls the Hand's `tool(label)` once, then
    answers `Marked <label>.` only if the tool result it got back says so."""
    runs = [
        {
            "match": f"^mark {label}$",
            "steps": [
                {
                    "text": f"Marking {label}.",
                    "tool_calls": [
                        {
                            "name": f"laptop__{tool(label)}",
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
        for label in labels
    ]
    return yaml.safe_dump({"runs": runs})


def start_marking_hand(mind: MindProcess, workspace: Path, token: str) -> HandProcess:
    program = workspace.parent / "marking_hand.py"
    program.write_text(MARKING_HAND)
    hand = HandProcess(mind.address, token, workspace, program=program)
    hand.start()
    return hand


def executions(workspace: Path) -> Counter[str]:
    log = workspace.parent / "executions.log"
    return Counter(log.read_text().split()) if log.exists() else Counter()


@dataclass
class StoreView:
    tasks: list[Task]
    projections: list[ToolProjection]
    messages: list[Message]
    runs: list[Run]
    approvals: list[Approval]

    def answers(self, key: str) -> list[str]:
        mine = [m for m in self.messages if m.conversation_key == key]
        return [m.text for m in mine if m.role == "assistant"]


def read_store(mind: MindProcess) -> StoreView:
    engine = create_engine(sync_url(mind.url))
    try:
        with engine.connect() as connection:
            return StoreView(
                tasks=list(connection.execute(select(Task)).all()),
                projections=list(connection.execute(select(ToolProjection)).all()),
                messages=list(connection.execute(select(Message).order_by(Message.id)).all()),
                runs=list(connection.execute(select(Run)).all()),
                approvals=list(connection.execute(select(Approval)).all()),
            )
    finally:
        engine.dispose()


def check_exactly_once(store: StoreView, ran: Counter[str]) -> None:
    """The invariants every crash must keep."""
    twice = {label: n for label, n in ran.items() if n > 1}
    tasks_of = {
        label: [
            (t.tool_call_id, t.id, t.attempt, t.state)
            for t in store.tasks
            if t.arguments.get("label") == label
        ]
        for label in twice
    }
    assert not twice, f"executed more than once on the Hand: {twice}; their tasks: {tasks_of}"
    per_call = Counter(task.tool_call_id for task in store.tasks)
    assert all(n == 1 for n in per_call.values()), f"a call got several tasks: {per_call}"
    projections = {p.tool_call_id: p for p in store.projections}
    for task in store.tasks:
        projection = projections[task.tool_call_id]
        expected = PROJECTION_OF_TASK.get(task.state, "running")
        assert projection.status == expected, (
            f"call {task.tool_call_id}: task {task.state} but projection {projection.status}"
        )
    running = [run.id for run in store.runs if run.state == "running"]
    assert not running, f"runs left running: {running}"
