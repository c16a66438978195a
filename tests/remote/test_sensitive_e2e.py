"""Sensitive tools end to end: a real `tobe mind serve` (Scripted model) and a real SDK Hand
declaring sensitive tools. Once a turn that called one ended, neither the SQLite database file
nor its WAL holds any of that turn's arguments, results or thinking; readers and later turns
see which datasets were queried with what status; the reply stays."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers.eventually import eventually
from helpers.mind_events import replay
from helpers.mind_process import MindProcess, running_mind
from remote_processes import Chat, HandProcess, attached_sdk_hand, run_ended

from tobe.v1 import common_pb2, mind_pb2

pytestmark = pytest.mark.e2e

ARGUMENT = "NIGHT-ARG-4412"
RESULT = "RESULT-VALUE-9931"
THINKING = "THINKING-OWL-7731"
REPLY = "REPLY-VISIBLE-5150"
REPLACEMENT = "[sensitive data removed after the turn: health.sleep (succeeded)]"
PLAIN_RESULT = "PLAIN-RESULT-3003"
SLOW_ARGUMENT = "HEART-ARG-6262"
SLOW_RESULT = "HEART-RESULT-7373"
SLOW_THINKING = "THINKING-HERON-8484"
# The interrupted call's arguments as later requests show them (it has no stored result).
ARGUMENTS_NOTE = "sensitive data removed after the turn"

HAND = '''
import asyncio, logging, os, sys
from pathlib import Path

from hand import Hand

logging.basicConfig(level=logging.INFO)
hand = Hand("laptop")
RELEASE = Path(sys.argv[0]).parent / "release"


@hand.tool(effect="read_only", sensitive=True, dataset="health.sleep")
async def sleep_log(night: str) -> str:
    """Last night's sleep."""
    return "night " + night + ": RESULT-VALUE-" + "9931"


@hand.tool(effect="read_only", sensitive=True, dataset="health.heart")
async def heart_log(day: str) -> str:
    """A day's heart rate; waits until released."""
    print("heart log started", flush=True)
    while not RELEASE.exists():
        await asyncio.sleep(0.05)
    return "day " + day + ": HEART-RESULT-" + "7373"


@hand.tool(effect="read_only")
async def echo(word: str) -> str:
    """Says a word back."""
    return "PLAIN-RESULT-" + word


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
'''

SCRIPT = {
    "runs": [
        {
            "match": "^sleep report",
            "steps": [
                {
                    "thinking": f"{THINKING} wonders about the night",
                    "text": "Let me look.",
                    "tool_calls": [{"name": "laptop__sleep_log", "arguments": {"night": ARGUMENT}}],
                },
                {
                    "expect": {"last_role": "tool", "last_contains": RESULT},
                    "text": f"{REPLY}: you slept well.",
                },
            ],
        },
        {
            "match": "^later",
            "steps": [
                {
                    "expect": {
                        "request_contains": [REPLACEMENT, REPLY],
                        "request_excludes": [ARGUMENT, RESULT, THINKING],
                    },
                    "text": "Later answered.",
                }
            ],
        },
        {
            "match": "^plain",
            "steps": [
                {
                    "text": "Echoing.",
                    "tool_calls": [{"name": "laptop__echo", "arguments": {"word": "3003"}}],
                },
                {"expect": {"last_contains": PLAIN_RESULT}, "text": "Echoed."},
            ],
        },
        {
            "match": "^recall",
            "steps": [{"expect": {"request_contains": [PLAIN_RESULT]}, "text": "Recalled."}],
        },
        {
            "match": "^after the crash",
            "steps": [
                {
                    "expect": {
                        "request_contains": [ARGUMENTS_NOTE],
                        "request_excludes": [SLOW_ARGUMENT, SLOW_RESULT, SLOW_THINKING],
                    },
                    "text": "Answered after the crash.",
                }
            ],
        },
        {
            "match": "^heart report",
            "steps": [
                {
                    "thinking": f"{SLOW_THINKING} wonders about the heart",
                    "text": "Reading your heart rate.",
                    "tool_calls": [
                        {"name": "laptop__heart_log", "arguments": {"day": SLOW_ARGUMENT}}
                    ],
                },
                {"text": "Done."},
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
    with attached_sdk_hand(mind, workspace, HAND, "health_hand") as process:
        yield process


@pytest.fixture
def chat(mind: MindProcess, hand: HandProcess) -> Iterator[Chat]:
    client = Chat(mind.address, mind.gateway_metadata)
    try:
        client.create("p_health")
        yield client
    finally:
        client.close()


def store_bytes(mind: MindProcess) -> bytes:
    """The database file and its WAL, as a `grep` of them would read them."""
    database = mind.data_dir / "tobe.db"
    wal = database.with_name("tobe.db-wal")
    return database.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def turn(chat: Chat, text: str, idem: str) -> None:
    """Send and wait for the run to end; it must have completed (a failed expectation of the
    script fails it)."""
    sent = chat.send("p_health", text, idem)
    events = chat.events_until(run_ended(sent.run_id))
    (ended,) = [
        e.run_changed
        for e in events
        if e.WhichOneof("payload") == "run_changed"
        and e.run_changed.id == sent.run_id
        and e.run_changed.state >= 2
    ]
    assert ended.state == common_pb2.RUN_STATE_COMPLETED, ended.reason


def history(chat: Chat) -> mind_pb2.GetHistoryResponse:
    request = mind_pb2.GetHistoryRequest(
        on_behalf_of=chat.who(), conversation_key="p_health", detail_mode=2
    )
    return chat.stub.GetHistory(request, metadata=chat.metadata, timeout=10)


@pytest.mark.sqlite_store(reason="reads the SQLite database file's bytes")
def test_a_sensitive_turn_leaves_no_readable_argument_result_or_thinking_in_the_database_file(
    mind: MindProcess, chat: Chat
) -> None:
    turn(chat, "sleep report", "k1")

    stored = store_bytes(mind)
    for raw in (ARGUMENT, RESULT, THINKING):
        assert raw.encode() not in stored, raw
    assert REPLY.encode() in stored

    messages = history(chat).messages
    assistant, result = messages[1], messages[2]
    assert (assistant.text, assistant.thinking, assistant.redacted) == ("Let me look.", "", True)
    assert [call.name for call in assistant.tool_calls] == ["laptop__sleep_log"]
    assert (result.text, result.redacted) == (REPLACEMENT, True)
    assert REPLY in messages[3].text and not messages[3].redacted
    events, _ = replay(chat.stub, chat.metadata)
    replayed = b"".join(event.SerializeToString() for event in events)
    for raw in (ARGUMENT, RESULT, THINKING):
        assert raw.encode() not in replayed, raw

    # The next turn's provider request holds the replacement, not the values: the script's
    # expectation fails that run otherwise.
    turn(chat, "later", "k2")
    for raw in (ARGUMENT, RESULT, THINKING):
        assert not [line for line in mind.output if raw in line], raw


def test_a_turn_without_a_sensitive_call_keeps_its_tool_results_readable(
    mind: MindProcess, chat: Chat
) -> None:
    turn(chat, "sleep report", "k1")
    turn(chat, "plain", "k2")
    messages = history(chat).messages
    plain = [m for m in messages if m.role == common_pb2.MESSAGE_ROLE_TOOL][-1]
    assert PLAIN_RESULT in plain.text and not plain.redacted
    turn(chat, "recall", "k3")  # a later request still holds it


@pytest.mark.sqlite_store(reason="reads the SQLite database file's bytes")
def test_a_kill_9_during_a_sealed_turn_leaves_no_readable_copy_once_recovery_ended_it(
    mind: MindProcess, hand: HandProcess, chat: Chat, workspace: Path
) -> None:
    chat.send("p_health", "heart report", "k1")
    hand.wait_output("heart log started")
    mind.kill()
    with sqlite3.connect(mind.data_dir / "tobe.db") as connection:
        ((key,),) = connection.execute("SELECT key FROM turn_keys").fetchall()

    mind.start(mind.address)  # same address: the Hand dials it again
    (workspace.parent / "release").touch()

    def task_ended() -> bool:
        with sqlite3.connect(mind.data_dir / "tobe.db") as connection:
            (state,) = connection.execute("SELECT state FROM tasks").fetchone()
        return bool(state not in ("offered", "accepted"))

    eventually(task_ended, 30, what="the Hand's result to be recorded")
    with sqlite3.connect(mind.data_dir / "tobe.db") as connection:
        assert connection.execute("SELECT count(*) FROM turn_keys").fetchone() == (0,)
        ((redaction,),) = connection.execute("SELECT redaction FROM runs").fetchall()
    assert json.loads(redaction) == [{"dataset": "health.heart", "status": "cancelled"}]
    stored = store_bytes(mind)
    for raw in (SLOW_ARGUMENT.encode(), SLOW_RESULT.encode(), SLOW_THINKING.encode(), key):
        assert raw not in stored, raw
    # The restarted Mind reads the history from the store: the next turn's request holds the
    # replacement (the script's expectation fails the run otherwise).
    turn(chat, "after the crash", "k2")
