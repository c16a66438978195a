"""End to end with real processes: every effectful offer reaches the Hand with a binding that
names what allowed the call and the arguments' digest; a read-only call needs none.

The Hand here insists on bindings (`require_binding=True`) and checks every digest, so a call
that succeeds proves its offer carried the right one; its policy prints what it was shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.mind_process import MindProcess, running_mind
from remote_processes import Chat, HandProcess, approval_requested, attached_sdk_hand, run_ended
from sqlalchemy import create_engine, select

from mind.store.engine import sync_url
from mind.store.models import Task
from tobe.runtime.digest import arguments_digest

pytestmark = pytest.mark.e2e

# A float with a zero fraction: Python writes 2.0, RFC 8785 (and JavaScript) write 2.
SENT = {"count": 2.0, "text": "café"}
SCRIPT = """
runs:
  - match: "^send"
    steps:
      - text: "Sending."
        tool_calls:
          - name: laptop__send
            arguments: {count: 2.0, text: "café"}
      - expect: {last_role: tool, last_contains: "sent 2"}
        text: "Sent."
  - match: "^look"
    steps:
      - text: "Looking."
        tool_calls:
          - name: laptop__look
            arguments: {text: "around"}
      - expect: {last_role: tool, last_contains: "saw around"}
        text: "Looked."
"""
STRICT_HAND = """
import asyncio, logging, os, sys

from hand import Hand

logging.basicConfig(level=logging.INFO)


def show(offer):
    print(f"OFFER {offer.tool} source={offer.approval_source} id={offer.approval_id}", flush=True)
    return None


hand = Hand("laptop", policy=show, require_binding=True)


@hand.tool(effect="external_side_effect")
async def send(count: float, text: str) -> str:
    \"\"\"Send a message.\"\"\"
    return f"sent {count:g} {text}"


@hand.tool
async def look(text: str) -> str:
    \"\"\"Look at something.\"\"\"
    return f"saw {text}"


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
"""


@pytest.fixture
def approvals() -> dict[str, str]:
    return {"TOBE_APPROVALS__EXTERNAL_SIDE_EFFECT": "allow"}


@pytest.fixture
def mind(tmp_path: Path, approvals: dict[str, str]) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script, clients=(), **approvals) as process:
        yield process


@pytest.fixture
def hand(mind: MindProcess, workspace: Path) -> Iterator[HandProcess]:
    with attached_sdk_hand(mind, workspace, STRICT_HAND, "strict_hand") as process:
        yield process


def stored_tasks(mind: MindProcess) -> dict[str, Task]:
    engine = create_engine(sync_url(mind.url))
    try:
        with engine.connect() as connection:
            return {row.tool: row for row in connection.execute(select(Task)).all()}
    finally:
        engine.dispose()


def offers(hand: HandProcess) -> list[str]:
    return [line for line in hand.output if line.startswith("OFFER ")]


def test_with_policy_allow_an_effectful_offer_carries_a_policy_binding_and_a_read_only_none(
    mind: MindProcess, hand: HandProcess
) -> None:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_bind")
        sent = chat.send("p_bind", "send it", "k1")
        chat.events_until(run_ended(sent.run_id))
        looked = chat.send("p_bind", "look around", "k2")
        chat.events_until(run_ended(looked.run_id))
    finally:
        chat.close()
    assert offers(hand) == ["OFFER send source=policy id=", "OFFER look source= id="]
    tasks = stored_tasks(mind)
    assert (tasks["send"].state, tasks["look"].state) == ("succeeded", "succeeded")
    send = tasks["send"]
    assert send.arguments_digest == arguments_digest(SENT)
    assert (send.approval_source, send.approval_detail) == (
        "policy",
        "default.external_side_effect",
    )
    assert tasks["look"].arguments_digest == ""


@pytest.mark.parametrize("approvals", [{}])
def test_a_persons_approval_reaches_the_hand_as_a_person_binding_with_its_id(
    mind: MindProcess, hand: HandProcess
) -> None:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_bind")
        sent = chat.send("p_bind", "send it", "k1")
        requested = chat.events_until(approval_requested)
        approval = [
            e.approval_changed for e in requested if e.WhichOneof("payload") == "approval_changed"
        ][0]
        chat.approve(approval.id)
        chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    assert offers(hand) == [f"OFFER send source=person id={approval.id}"]
    send = stored_tasks(mind)["send"]
    assert send.state == "succeeded"
    assert send.arguments_digest == approval.arguments_digest == arguments_digest(SENT)
