"""Restarts while a client is subscribed: it ends with exactly the durable events it should."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from helpers.face_client import FaceClient, is_replay_done
from helpers.face_process import FaceProcess, MindDirect, running_face, wait_for_line
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import face_pb2

pytestmark = pytest.mark.e2e
FAILED_PRECONDITION = 9


def created(key: str):
    return lambda e: e.HasField("conversation_created") and e.conversation_created.key == key


async def produce(direct: MindDirect, key: str) -> None:
    """A conversation and one finished chat run in it: several durable events."""
    await direct.create(key)
    await direct.send(key, "hello")
    await direct.wait_run_end(key)


async def test_a_client_resumes_after_face_restarts(mind: MindProcess, face: FaceProcess) -> None:
    direct = MindDirect(mind)
    token = mind.client_tokens["alice"]
    before = await FaceClient.connect(face.address, token)
    try:
        await before.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await produce(direct, "p_before")
        await before.wait_event(created("p_before"))
        face.kill()
        status = await before.wait_closed()
        assert status is not None and status.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await before.close()
    # Events happen while Face is down; the Mind keeps them.
    await produce(direct, "p_while_down")
    face.start(face.address)

    last = before.durable_ids()[-1]
    after = await FaceClient.connect(face.address, token, resume_after_id=last)
    try:
        await after.wait_frame(is_replay_done)
        await direct.create("p_after")
        await after.wait_event(created("p_after"))
        truth = [e.durable_id for e in await direct.durable_events("alice")]
        assert before.durable_ids() + after.durable_ids() == truth
    finally:
        await after.close()
        await direct.close()


@pytest.mark.pg_e2e
async def test_a_subscribed_client_misses_nothing_when_the_mind_restarts(
    mind: MindProcess, face: FaceProcess
) -> None:
    direct = MindDirect(mind)
    client = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await produce(direct, "p_before")
        await client.wait_event(created("p_before"))
        mind.restart(same_address=True)
        await direct.close()
        direct = MindDirect(mind)
        await produce(direct, "p_after")
        await client.wait_event(created("p_after"), timeout=90)
        await direct.create("p_last")
        await client.wait_event(created("p_last"), timeout=90)
        truth = [e.durable_id for e in await direct.durable_events("alice")]
        # The same connection stayed open through the restart and got every event once.
        assert client.status is None
        assert client.durable_ids() == truth
    finally:
        await client.close()
        await direct.close()


@pytest.fixture
def pruning_mind(tmp_path: Path, script_path: Path) -> Iterator[MindProcess]:
    """A Mind that keeps only its newest 100 events after each start."""
    with running_mind(tmp_path, script=script_path, TOBE_MIND__OUTBOX_KEEP="100") as mind:
        yield mind


async def test_resuming_from_a_pruned_id_requires_a_snapshot(pruning_mind: MindProcess) -> None:
    mind = pruning_mind
    with running_face(mind) as face:
        direct = MindDirect(mind)
        token = mind.client_tokens["alice"]
        try:
            await direct.create("p_old")
            old_id = (await direct.durable_events("alice"))[-1].durable_id
            for n in range(120):
                await direct.create(f"p_new{n:03d}")
            mind.restart(same_address=True)  # the Mind prunes its outbox when it starts
            # Face is back on the Mind once its feed is live again.
            await wait_for_line(face, "event feed live after durable id", occurrences=2)

            client = await FaceClient.connect(face.address, token, resume_after_id=old_id)
            try:
                refused = await client.reply("hello")
                assert refused.error.code == FAILED_PRECONDITION
                assert "snapshot required" in refused.error.message
                snapshot = (
                    await client.command(
                        snapshot=face_pb2.SnapshotCommand(conversation_key="p_new119")
                    )
                ).snapshot
                await client.command(
                    subscribe=face_pb2.SubscribeCommand(after_id=snapshot.last_event_id)
                )
                await client.wait_frame(is_replay_done)
                await direct.close()
                direct = MindDirect(mind)
                await direct.create("p_later")
                await client.wait_event(created("p_later"), timeout=90)
            finally:
                await client.close()
        finally:
            await direct.close()
