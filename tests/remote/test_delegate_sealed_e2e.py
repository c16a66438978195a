"""Child runs and sensitive tools, with a real `tobe mind serve` (Scripted model) and an SDK
Hand declaring a sensitive tool: a child never gets one (not by default, not by name), and a
sealed turn that has read sensitive data cannot hand it to a child, so nothing it read reaches
a readable row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers.mind_process import MindProcess, running_mind
from remote_processes import Chat, attached_sdk_hand, run_ended
from sqlalchemy import create_engine, func, select

from mind.store.engine import sync_url
from mind.store.models import Delegation
from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

ARGUMENT = "NIGHT-ARG-5120"
RESULT = "RESULT-VALUE-6607"
CONVERSATION = "p_sealed_parent"

HAND = '''
import asyncio, os, sys

from hand import Hand

hand = Hand("laptop")


@hand.tool(effect="read_only", sensitive=True, dataset="health.sleep")
async def sleep_log(night: str) -> str:
    """Last night's sleep."""
    return "night " + night + ": RESULT-VALUE-" + "6607"


@hand.tool(effect="read_only")
async def echo(word: str) -> str:
    """Says a word back."""
    return "echo " + word


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
'''

SCRIPT = {
    "runs": [
        {
            "match": "^sleep, then delegate",
            "steps": [
                {"tool_calls": [{"name": "laptop__sleep_log", "arguments": {"night": ARGUMENT}}]},
                {
                    "expect": {"last_contains": RESULT},
                    "tool_calls": [
                        {"name": "delegate", "arguments": {"task": f"summarise {RESULT}"}}
                    ],
                },
                {
                    "expect": {"last_contains": "this run has read sensitive data"},
                    "text": "Not handed on.",
                },
            ],
        },
        {
            "match": "^delegate the log$",
            "steps": [
                {
                    "tool_calls": [
                        {
                            "name": "delegate",
                            "arguments": {"task": "read the log", "tools": ["laptop__sleep_log"]},
                        }
                    ]
                },
                {
                    "expect": {"last_contains": "never gets a tool that reads sensitive data"},
                    "text": "Refused by name.",
                },
            ],
        },
        {
            "match": "^delegate plainly$",
            "steps": [
                {"tool_calls": [{"name": "delegate", "arguments": {"task": "child plain"}}]},
                {"expect": {"last_contains": "Child plain done."}, "text": "Plain delegated."},
            ],
        },
        {
            "match": "^child plain$",
            "steps": [
                {
                    "expect": {
                        "tools_include": ["laptop__echo"],
                        "tools_exclude": ["laptop__sleep_log", "delegate"],
                    },
                    "text": "Child plain done.",
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
def chat(mind: MindProcess, workspace: Path) -> Iterator[Chat]:
    with attached_sdk_hand(mind, workspace, HAND, "sealed_hand"):
        client = Chat(mind.address, mind.gateway_metadata)
        try:
            client.create(CONVERSATION)
            yield client
        finally:
            client.close()


def turn(chat: Chat, text: str, idem: str) -> None:
    """Send and wait for the run to end; it must have completed (a failed expectation of the
    script fails it)."""
    sent = chat.send(CONVERSATION, text, idem)
    events = chat.events_until(run_ended(sent.run_id))
    (ended,) = [
        e.run_changed
        for e in events
        if e.WhichOneof("payload") == "run_changed"
        and e.run_changed.id == sent.run_id
        and e.run_changed.state >= 2
    ]
    assert ended.state == common_pb2.RUN_STATE_COMPLETED, ended.reason


def delegation_count(mind: MindProcess) -> int:
    engine = create_engine(sync_url(mind.url))
    try:
        with engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(Delegation)).scalar())
    finally:
        engine.dispose()


@pytest.mark.sqlite_store(reason="reads the SQLite database file's bytes")
def test_a_turn_that_read_sensitive_data_cannot_hand_it_to_a_child(
    mind: MindProcess, chat: Chat
) -> None:
    turn(chat, "sleep, then delegate", "k1")
    assert delegation_count(mind) == 0
    database = mind.data_dir / "tobe.db"
    wal = database.with_name("tobe.db-wal")
    stored = database.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    for raw in (ARGUMENT, RESULT):
        assert raw.encode() not in stored, raw


def test_a_child_never_gets_a_sensitive_tool(mind: MindProcess, chat: Chat) -> None:
    turn(chat, "delegate the log", "k1")
    assert delegation_count(mind) == 0
    # Offered by default: every tool of the parent's but the sensitive one (the child's
    # script fails its run otherwise).
    turn(chat, "delegate plainly", "k2")
    assert delegation_count(mind) == 1
