"""End to end with real processes: the Node.js Hand of `examples/node-hand` attaches to a real
Mind, a scripted turn calls its tools and the answers come back, and an approved effectful call
whose arguments hold `2.0` is accepted: the Node Hand computes the same approval digest as the
Mind (RFC 8785 writes `2.0` as `2` in every language).

CI installs Node.js and the example's packages (`npm ci`); without them these tests fail.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.mind_process import MindProcess, issue_token, running_mind
from remote_processes import Chat, HandProcess, run_ended
from sqlalchemy import create_engine, select

from mind.store.engine import sync_url
from mind.store.models import Task
from tobe.runtime.digest import arguments_digest

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node-hand"
SCRIPT = """
runs:
  - match: "^time"
    steps:
      - text: "Looking at the clock."
        tool_calls:
          - name: laptop__now
            arguments: {}
      - expect: {last_role: tool, last_contains: "utc"}
        text: "It is late."
  - match: "^say"
    steps:
      - text: "Saying it."
        tool_calls:
          - name: laptop__say
            arguments: {text: "café", count: 2.0}
      - expect: {last_role: tool, last_contains: "said \\"café\\" 2 times"}
        text: "Said."
"""


def node_hand_command(mind_address: str) -> list[str]:
    """`node examples/node-hand/hand.js MIND`; fails (never skips) without Node or packages."""
    node = shutil.which("node")
    assert node is not None, "Node.js is missing: install nodejs (CI does, see .ci/run)"
    assert (EXAMPLE / "node_modules").is_dir(), (
        f"the example's packages are missing: run `npm ci --prefix {EXAMPLE}`"
    )
    return [node, str(EXAMPLE / "hand.js"), "--name", "laptop", mind_address]


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(
        tmp_path, script=script, clients=(), TOBE_APPROVALS__EXTERNAL_SIDE_EFFECT="allow"
    ) as process:
        yield process


@pytest.fixture
def node_hand(mind: MindProcess, workspace: Path) -> Iterator[HandProcess]:
    """The Node Hand with a credential of principal `laptop` serving alice, attached."""
    token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
    process = HandProcess(mind.address, token, workspace, argv=node_hand_command(mind.address))
    process.start()
    try:
        process.wait_attached()
        yield process
    finally:
        process.kill()


def stored_tasks(mind: MindProcess) -> dict[str, Task]:
    engine = create_engine(sync_url(mind.url))
    try:
        with engine.connect() as connection:
            return {row.tool: row for row in connection.execute(select(Task)).all()}
    finally:
        engine.dispose()


def test_a_scripted_turn_calls_the_node_hands_tool_and_gets_its_answer(
    mind: MindProcess, node_hand: HandProcess
) -> None:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_node")
        sent = chat.send("p_node", "time please", "k1")
        chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    now = stored_tasks(mind)["now"]
    assert now.state == "succeeded"
    assert '"utc"' in (now.output or "")


def test_an_approved_effectful_call_with_a_float_argument_passes_the_node_hands_digest_check(
    mind: MindProcess, node_hand: HandProcess
) -> None:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_node")
        sent = chat.send("p_node", "say it", "k1")
        chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    say = stored_tasks(mind)["say"]
    assert say.state == "succeeded"
    assert say.arguments_digest == arguments_digest({"text": "café", "count": 2.0})
    assert node_hand.output.count("SAY café") == 2
