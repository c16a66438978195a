"""A client that stops reading: bounded memory in Face, a resync, then nothing lost."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import grpc
import pytest
from helpers.face_client import SLOW_READER_OPTIONS, FaceClient, is_replay_done
from helpers.face_process import MindDirect, running_face, wait_for_line
from helpers.mind_process import MindProcess

from tobe.v1 import face_pb2

pytestmark = pytest.mark.e2e
QUEUE_SIZE = 64
# One run streams 5,000 thinking and 5,000 text deltas; 300 conversations add durable events,
# more than the queue holds: over 10,000 events in all.
DELTAS = 5_000
CONVERSATIONS = 300
PRODUCERS = 8
FLOOD_SCRIPT = f"""
runs:
  - match: "^flood"
    steps:
      - {{thinking: "{"y" * DELTAS}", text: "{"x" * DELTAS}", chunks: {DELTAS}}}
"""


@pytest.fixture
def script_path(tmp_path: Path) -> Path:
    path = tmp_path / "flood.yaml"
    path.write_text(FLOOD_SCRIPT)
    return path


async def create_conversations(direct: MindDirect) -> list[str]:
    keys = [f"p_flood{n:05d}" for n in range(CONVERSATIONS)]
    cursor = iter(keys)

    async def worker() -> None:
        for key in cursor:
            await direct.create(key, title="t" * 256)

    await asyncio.gather(*(worker() for _ in range(PRODUCERS)))
    return keys


async def flood_run(direct: MindDirect) -> None:
    """Start the delta flood in its own conversation and wait until its run has ended."""
    await direct.create("p_stream")
    await direct.send("p_stream", "flood")
    await direct.wait_run_end("p_stream")


async def test_a_client_that_stops_reading_is_told_to_resync_and_loses_nothing(
    mind: MindProcess,
) -> None:
    direct = MindDirect(mind)
    with running_face(mind, queue_size=str(QUEUE_SIZE), write_timeout="2") as face:
        client = await FaceClient.connect(
            face.address, mind.client_tokens["alice"], reading=False, options=SLOW_READER_OPTIONS
        )
        try:
            await client.send(subscribe=face_pb2.SubscribeCommand(after_id=0))
            rss_before = face.rss_kib()
            keys, _ = await asyncio.gather(create_conversations(direct), flood_run(direct))
            rss_after = face.rss_kib()
            # Face cut the client off, and never held more than its queue for it.
            try:
                await wait_for_line(face, "resync required")
            except TimeoutError:
                raise AssertionError("\n".join(face.output[-30:])) from None
            closing = face.log_lines("resync required")
            high_water = int(re.search(r"high water (\d+) of (\d+)", closing[0]).group(1))
            assert high_water <= QUEUE_SIZE
            assert rss_after - rss_before < 32 * 1024, (rss_before, rss_after)

            # The client reads what reached it, then the end of the stream.
            client.start_reading()
            status = await client.wait_closed()
            assert status is not None
            assert status.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert status.details() == "resync required"
            seen = client.durable_ids()
            assert len(seen) < CONVERSATIONS
            last = seen[-1] if seen else 0
        finally:
            await client.close()

        resumed = await FaceClient.connect(
            face.address, mind.client_tokens["alice"], resume_after_id=last
        )
        try:
            await resumed.wait_frame(is_replay_done, timeout=60)
            recovered = resumed.durable_ids()
        finally:
            await resumed.close()
    truth = await direct.durable_events("alice")
    await direct.close()
    combined = seen + recovered
    assert combined == [event.durable_id for event in truth]
    created = {
        e.conversation_created.key
        for e in client.events + resumed.events
        if e.HasField("conversation_created")
    }
    assert created == set(keys) | {"p_stream"}
