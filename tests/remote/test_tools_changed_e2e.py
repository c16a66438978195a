"""A Hand's tools come and go while it runs, end to end: a real `tobe mind serve` (Scripted
model, whose expectations check the tool list each run is given) and a real SDK Hand process
whose `install` and `uninstall` tools add and withdraw a `lookup` tool, as a Hand hosting
plugins or servers would. `tobe admin status` counts the Hand's tools as they change, and a
Hand reconnecting to a restarted Mind declares the tools it has then."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers.admin_cli import Admin
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, running_mind
from remote_processes import Chat, HandProcess, attached_sdk_hand, run_ended

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

LOOKED_UP = "LOOKED-UP-"

HAND = '''
import asyncio, logging, os, sys

from hand import Hand, ToolFunction

logging.basicConfig(level=logging.INFO)
hand = Hand("laptop")


async def lookup(word: str) -> str:
    """Look a word up."""
    return "LOOKED-UP-" + word


@hand.tool(effect="read_only")
async def install() -> str:
    """Load the lookup plugin."""
    hand.add_tool(ToolFunction.wrap(lookup, effect="read_only"))
    return "installed"


@hand.tool(effect="read_only")
async def uninstall() -> str:
    """Unload the lookup plugin."""
    hand.remove_tool("lookup")
    return "uninstalled"


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
'''


def call_step(tool: str, arguments: dict[str, str] | None = None, **expect: object) -> dict:
    step: dict = {
        "text": f"Calling {tool}.",
        "tool_calls": [{"name": tool, "arguments": arguments or {}}],
    }
    if expect:
        step["expect"] = expect
    return step


SCRIPT = {
    "runs": [
        {
            "match": "^install",
            "steps": [
                call_step("laptop__install", tools_exclude=["laptop__lookup"]),
                {"expect": {"last_contains": "installed"}, "text": "Installed."},
            ],
        },
        {
            "match": "^look up",
            "steps": [
                call_step("laptop__lookup", {"word": "owl"}, tools_include=["laptop__lookup"]),
                {"expect": {"last_contains": f"{LOOKED_UP}owl"}, "text": "Looked up."},
            ],
        },
        {
            # After the Mind restarted: a run index of its own, so its call has its own id.
            "match": "^after the restart",
            "steps": [
                call_step("laptop__lookup", {"word": "heron"}, tools_include=["laptop__lookup"]),
                {"expect": {"last_contains": f"{LOOKED_UP}heron"}, "text": "Looked up again."},
            ],
        },
        {
            "match": "^uninstall",
            "steps": [
                call_step("laptop__uninstall"),
                {"expect": {"last_contains": "uninstalled"}, "text": "Uninstalled."},
            ],
        },
        {
            "match": "^anything left",
            "steps": [
                {
                    "expect": {
                        "tools_include": ["laptop__install", "laptop__uninstall"],
                        "tools_exclude": ["laptop__lookup"],
                    },
                    "text": "Only install and uninstall are left.",
                }
            ],
        },
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
    with attached_sdk_hand(mind, workspace, HAND, "plugin_hand") as process:
        yield process


def turn(mind: MindProcess, text: str, idem: str) -> None:
    """Send and wait for the run to end; it must have completed (a failed expectation of the
    script, e.g. a tool list without the tool it expects, fails it)."""
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        sent = chat.send("p_tools", text, idem)
        events = chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    (ended,) = [
        e.run_changed
        for e in events
        if e.WhichOneof("payload") == "run_changed"
        and e.run_changed.id == sent.run_id
        and e.run_changed.state >= 2
    ]
    assert ended.state == common_pb2.RUN_STATE_COMPLETED, ended.reason


def tool_changes(mind: MindProcess) -> list[str]:
    return [line for line in mind.output if "hand laptop changed its tools" in line]


def hand_tools(admin: Admin) -> list[int]:
    """`tobe admin status`: how many tools each connected Hand declares."""
    return [hand["tools"] for hand in admin.json("status")["hands"]]


def test_tools_a_hand_adds_and_withdraws_while_attached_reach_the_next_runs(
    mind: MindProcess, hand: HandProcess
) -> None:
    admin = Admin(mind.data_dir)
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_tools")
    finally:
        chat.close()
    assert hand_tools(admin) == [2]

    turn(mind, "install the plugin", "k1")
    eventually(lambda: tool_changes(mind), 10, what="the Mind taking the new tool set")
    assert "added lookup" in tool_changes(mind)[-1]
    assert hand_tools(admin) == [3]
    turn(mind, "look up owl", "k2")

    # A restarted Mind hears the Hand's current tools in its hello.
    mind.restart(same_address=True)
    hand.wait_attached(2)
    eventually(
        lambda: hand_tools(Admin(mind.data_dir)), 30, until=lambda n: n == [3], what="3 tools"
    )
    turn(mind, "after the restart, look up heron", "k3")

    turn(mind, "uninstall the plugin", "k4")
    eventually(
        lambda: tool_changes(mind),
        10,
        until=lambda lines: any("removed lookup" in line for line in lines),
        what="the Mind taking the withdrawal",
    )
    assert hand_tools(admin) == [2]
    turn(mind, "anything left?", "k5")
