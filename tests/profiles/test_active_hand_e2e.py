"""The active Hand end to end: a real Mind (Scripted model) and two real SDK Hands of alice.

With no active Hand the model is offered both Hands' tools; with one chosen, only that Hand's;
set back to every Hand (empty), both again. Each step's `expect` fails the run when the offered
tools are wrong, so a completed run proves what the model saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import grpc
import pytest
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, issue_token, running_mind

from tests.remote.remote_processes import HandProcess
from tobe.v1 import common_pb2, mind_pb2

pytestmark = pytest.mark.e2e

KEY = "p_hands"
DESK_TOOL, PHONE_TOOL = "desk__read_desk", "phone__read_phone"
SCRIPT = f"""
runs:
  - match: "^both"
    steps:
      - expect: {{tools_include: [{DESK_TOOL}, {PHONE_TOOL}]}}
        text: "both hands"
  - match: "^desk only"
    steps:
      - expect: {{tools_include: [{DESK_TOOL}], tools_exclude: [{PHONE_TOOL}]}}
        text: "desk alone"
"""
HAND = """
import asyncio, logging, os, sys

from hand import Hand

logging.basicConfig(level=logging.INFO)
hand = Hand("{name}")


@hand.tool
async def read_{name}(text: str) -> str:
    \"\"\"Read something on this Hand.\"\"\"
    return f"{name} read {{text}}"


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
"""


def start_hand(mind: MindProcess, base: Path, name: str) -> HandProcess:
    """An SDK Hand named `name` (its credential's principal) serving alice, attached."""
    workspace = base / name / "workspace"
    workspace.mkdir(parents=True)
    program = base / name / f"{name}_hand.py"
    program.write_text(HAND.format(name=name))
    token = issue_token(mind.url, kind="hand", principal=name, scopes=["serve:alice"])
    process = HandProcess(mind.address, token, workspace, program=program)
    process.start()
    return process


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script) as process:
        yield process


@pytest.fixture
def hands(mind: MindProcess, tmp_path: Path) -> Iterator[list[HandProcess]]:
    with ExitStack() as stack:
        started = []
        for name in ("desk", "phone"):
            process = start_hand(mind, tmp_path / "hands", name)
            stack.callback(process.kill)
            started.append(process)
        for process in started:
            process.wait_attached()
        yield started


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    gateway = Gateway.connect(mind)
    try:
        yield gateway
    finally:
        gateway.close()


def run(gateway: Gateway, key: str, text: str, idem: str) -> common_pb2.Run:
    after = gateway.head()
    run_id = gateway.send(key, text, idem).run_id
    events = gateway.wait_runs_ended(after, {run_id})
    return [r for r in payloads(events, "run_changed") if r.id == run_id][-1]


def set_active_hand(
    gateway: Gateway, key: str, hand: str, principal: str = "alice"
) -> mind_pb2.SetActiveHandResponse:
    request = mind_pb2.SetActiveHandRequest(
        on_behalf_of=gateway.who(principal), conversation_key=key, hand=hand
    )
    return gateway.stub.SetActiveHand(request, metadata=gateway.md, timeout=10)


def test_switching_the_active_hand_changes_the_tools_the_model_is_offered(
    gateway: Gateway, hands: list[HandProcess]
) -> None:
    gateway.create(KEY)
    first = run(gateway, KEY, "both at first", "h1")
    assert first.state == common_pb2.RUN_STATE_COMPLETED, first.reason

    after = gateway.head()
    assert set_active_hand(gateway, KEY, "desk").conversation.active_hand == "desk"
    events = gateway.wait_for(after, lambda evs: payloads(evs, "conversation_changed"))
    (changed,) = payloads(events, "conversation_changed")
    assert (changed.key, changed.active_hand) == (KEY, "desk")
    alone = run(gateway, KEY, "desk only now", "h2")
    assert alone.state == common_pb2.RUN_STATE_COMPLETED, alone.reason
    # The same step that passed with both Hands fails with one: the phone's tool is gone.
    missing = run(gateway, KEY, "both again?", "h3")
    assert missing.state == common_pb2.RUN_STATE_FAILED
    assert f"expected tools ['{PHONE_TOOL}'] to be offered" in missing.reason

    after = gateway.head()
    assert set_active_hand(gateway, KEY, "").conversation.active_hand == ""
    events = gateway.wait_for(after, lambda evs: payloads(evs, "conversation_changed"))
    assert [c.active_hand for c in payloads(events, "conversation_changed")] == [""]
    again = run(gateway, KEY, "both once more", "h4")
    assert again.state == common_pb2.RUN_STATE_COMPLETED, again.reason


def test_a_member_cannot_choose_the_active_hand(gateway: Gateway, hands: list[HandProcess]) -> None:
    gateway.create("g_hands", members=("bob",))
    with pytest.raises(grpc.RpcError) as refused:
        set_active_hand(gateway, "g_hands", "desk", principal="bob")
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "only the owner of 'g_hands' (alice)" in refused.value.details()
    # Nothing changed: the model still sees both Hands.
    assert gateway.snapshot("g_hands").conversation.active_hand == ""
    both = run(gateway, "g_hands", "both for the team", "h5")
    assert both.state == common_pb2.RUN_STATE_COMPLETED, both.reason
