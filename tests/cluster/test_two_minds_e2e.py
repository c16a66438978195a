"""Two live Minds on one PostgreSQL database (issue 40): real Mind processes, a real server.

Each conversation is served by the Mind that holds its lease; a request sent to the other
Mind is forwarded there, and a subscriber of either Mind sees every commit. A Mind that is
paused (SIGSTOP) past its lease loses the conversation to the other, which resumes it as a
restart does; when the paused Mind wakes, its writes are refused by the lease's epoch and
nothing it still had in hand lands.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.eventually import eventually_async
from helpers.face_process import MindDirect
from helpers.mind_events import events_until_async
from helpers.mind_process import MindProcess
from helpers.shared_database import SharedDatabase, shared_database
from helpers.store_backend import rows

from tobe.v1 import common_pb2, events_pb2

pytestmark = pytest.mark.e2e
LEASE_SECONDS = "2"
SCRIPT = """
runs:
  - match: "^slow"
    steps:
      - {delay: 8, text: "the slow reply"}
  - match: "^stream"
    steps:
      - {text: "one two three four", chunks: 4}
  - match: ".*"
    steps:
      - text: "ok"
"""


@pytest.fixture
def database() -> Iterator[SharedDatabase]:
    with shared_database() as shared:
        yield shared


@pytest.fixture
def minds(tmp_path: Path, database: SharedDatabase) -> Iterator[list[MindProcess]]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    started = [
        database.mind(
            tmp_path / name,
            script,
            TOBE_MIND__NODE_ID=name,
            TOBE_MIND__LEASE_SECONDS=LEASE_SECONDS,
        )
        for name in ("mind-a", "mind-b")
    ]
    try:
        for mind in started:
            mind.start()
        yield started
    finally:
        for mind in started:
            if mind.process is not None and mind.process.poll() is None:
                mind.process.send_signal(signal.SIGCONT)
            mind.kill()


def _owner(url: str, key: str) -> tuple[str, int]:
    [(node_id, epoch)] = rows(
        url, "SELECT node_id, epoch FROM conversation_leases WHERE conversation_key = ?", key
    )
    return node_id, epoch


def _texts(url: str, key: str, role: str) -> list[str]:
    found = rows(
        url,
        "SELECT text FROM messages WHERE conversation_key = ? AND role = ? ORDER BY id",
        key,
        role,
    )
    return [text for (text,) in found]


async def _replies(url: str, key: str, expected: list[str]) -> None:
    await eventually_async(
        lambda: _texts(url, key, "assistant"),
        until=lambda found: found == expected,
        what=f"the replies of {key}",
    )


async def test_a_request_sent_to_either_mind_reaches_the_owner_and_both_see_every_event(
    minds: list[MindProcess], database: SharedDatabase
) -> None:
    a, b = (MindDirect(mind) for mind in minds)
    try:
        await a.create("p_shared")
        await a.send("p_shared", "hello a")
        await a.wait_run_end("p_shared")
        assert _owner(database.url, "p_shared") == ("mind-a", 1)

        # Sent to mind b: forwarded to mind a, which owns it and runs it.
        await b.send("p_shared", "hello b")
        await _replies(database.url, "p_shared", ["ok", "ok"])
        assert _owner(database.url, "p_shared") == ("mind-a", 1)
        assert _texts(database.url, "p_shared", "user") == ["hello a", "hello b"]

        # Each Mind replays the same durable events, committed by the other or itself.
        seen_by_a = await a.durable_events("alice")
        seen_by_b = await b.durable_events("alice")
        assert seen_by_a == seen_by_b and len(seen_by_a) > 4
        # A conversation made on mind b is served by mind b, through mind a as well.
        await b.create("p_other")
        await a.send("p_other", "hello again")
        await _replies(database.url, "p_other", ["ok"])
        assert _owner(database.url, "p_other") == ("mind-b", 1)
    finally:
        await a.close()
        await b.close()


async def test_a_paused_owner_loses_its_conversation_and_its_late_writes_are_refused(
    minds: list[MindProcess], database: SharedDatabase
) -> None:
    first, second = minds
    a, b = MindDirect(first), MindDirect(second)
    try:
        await a.create("p_paused")
        await a.send("p_paused", "slow one")
        assert first.process is not None
        # Mind a is paused in the middle of its run, its lease running.
        first.process.send_signal(signal.SIGSTOP)

        # Mind b finds the run left running once the lease runs out, takes the conversation
        # over (a new epoch) and records the run as interrupted, as a restart does.
        await eventually_async(
            lambda: _owner(database.url, "p_paused"),
            until=lambda owner: owner == ("mind-b", 2),
            what="mind b to own p_paused",
        )
        states = lambda: rows(  # noqa: E731
            database.url, "SELECT state FROM runs WHERE conversation_key = ?", "p_paused"
        )
        await eventually_async(
            states, until=lambda found: found == [("interrupted",)], what="the run interrupted"
        )

        # Mind a wakes and its run ends its wait: the reply it had in hand is refused.
        first.process.send_signal(signal.SIGCONT)
        await eventually_async(
            lambda: [line for line in first.output if "no longer serves conversation" in line],
            what="mind a to let p_paused go",
        )
        await asyncio.sleep(9)  # past the scripted reply's delay
        assert _texts(database.url, "p_paused", "assistant") == []
        assert states() == [("interrupted",)]
        assert _owner(database.url, "p_paused") == ("mind-b", 2)

        # The conversation goes on on mind b, whichever Mind is asked.
        await a.send("p_paused", "after the pause")
        await _replies(database.url, "p_paused", ["ok"])
    finally:
        await a.close()
        await b.close()


async def test_a_subscriber_of_the_other_mind_sees_the_owners_reply_stream_in_its_place(
    minds: list[MindProcess], database: SharedDatabase
) -> None:
    a, b = (MindDirect(mind) for mind in minds)
    try:
        await a.create("p_stream")
        # A subscriber of mind b, which does not own the conversation, with ephemeral events.
        following = asyncio.create_task(
            events_until_async(
                b.stub,
                b.mind.gateway_metadata,
                lambda events: _reply_stored(events, "p_stream"),
                include_ephemeral=True,
                what="the streamed reply and its message",
            )
        )
        await asyncio.sleep(0.5)  # subscribed
        await a.send("p_stream", "stream it")
        events = await following
        mine = [event for event in events if event.conversation_key == "p_stream"]
        deltas = [event.text_delta.text for event in mine if event.HasField("text_delta")]
        assert "".join(deltas) == "one two three four" and len(deltas) == 4
        # Each delta comes after the run started and before the reply's message.
        kinds = [event.WhichOneof("payload") for event in mine]
        first_delta, stored = kinds.index("text_delta"), len(kinds) - 1
        assert "run_changed" in kinds[:first_delta]
        assert all(kind == "text_delta" for kind in kinds[first_delta : first_delta + 4])
        assert kinds[stored] == "message_appended" and stored > first_delta + 3
    finally:
        await a.close()
        await b.close()


def _reply_stored(events: list[events_pb2.Event], key: str) -> bool:
    event = events[-1]
    return (
        event.conversation_key == key
        and event.HasField("message_appended")
        and event.message_appended.role == common_pb2.MESSAGE_ROLE_ASSISTANT
    )
