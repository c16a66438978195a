"""A success the Hand reports after a `cancel` counts, in the task and in the conversation alike
(real `tobe mind serve`, a real Hand process, the run cancelled through the Mind's API)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from crash_checks import PROJECTION_OF_TASK, read_store
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, running_mind
from remote_processes import Chat, HandProcess, attached_sdk_hand

from tobe.v1 import mind_pb2

pytestmark = pytest.mark.e2e

STUBBORN_HAND = '''
import asyncio, logging, os, sys

from hand import Hand

logging.basicConfig(level=logging.INFO)
hand = Hand("laptop")


@hand.tool(effect="read_only")
async def stubborn() -> str:
    """Finishes its work even when asked to stop."""
    print("stubborn started", flush=True)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        return "finished anyway"
    return ""


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
'''

SCRIPT = {
    "runs": [
        {
            "match": "^go$",
            "steps": [
                {"text": "Going.", "tool_calls": [{"name": "laptop__stubborn", "arguments": {}}]},
                {"text": "Done."},
            ],
        }
    ]
}


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    with running_mind(tmp_path, script=script, clients=()) as started:
        yield started


@pytest.fixture
def hand(mind: MindProcess, workspace: Path) -> Iterator[HandProcess]:
    with attached_sdk_hand(mind, workspace, STUBBORN_HAND, "stubborn_hand") as process:
        yield process


def test_a_success_reported_after_a_cancel_is_the_calls_terminal_with_its_output(
    mind: MindProcess, hand: HandProcess
) -> None:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_cancel")
        chat.send("p_cancel", "go", "k1")
        eventually(lambda: "stubborn started" in hand.output, 30, what="the tool to start")
        chat.stub.CancelRun(
            mind_pb2.CancelRunRequest(on_behalf_of=chat.who(), conversation_key="p_cancel"),
            metadata=chat.metadata,
            timeout=30,
        )
    finally:
        chat.close()
    store = read_store(mind)
    ((task,),) = [store.tasks]
    ((projection,),) = [store.projections]
    ((run,),) = [store.runs]
    eventually(
        lambda: any("cancelling task" in line for line in hand.output), what="the Hand's cancel"
    )
    assert task.state == "succeeded" and task.cancel_requested_at is not None
    assert projection.status == PROJECTION_OF_TASK[task.state]
    assert [m.text for m in store.messages if m.role == "tool"] == ["finished anyway"]
    assert run.state == "cancelled"
