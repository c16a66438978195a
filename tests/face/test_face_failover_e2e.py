"""A Face given several Minds on one PostgreSQL database fails over to the one that answers.

Real processes on a real PostgreSQL server (`TOBE_TEST_PG_URL`): the Minds share the database
through `TOBE_DATABASE_URL`, each with its own data directory. The second Mind here is a
cold standby, started only once the first is dead (tests/cluster runs them side by side).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.face_client import FaceClient, run_ended
from helpers.face_process import FaceProcess, MindDirect, face_env, wait_for_line
from helpers.mind_process import MindProcess
from helpers.ports import free_port
from helpers.shared_database import SharedDatabase, shared_database

from tobe.v1 import face_pb2

pytestmark = pytest.mark.e2e
SWITCH = "the Face switches from the Mind at"


@pytest.fixture
def database() -> Iterator[SharedDatabase]:
    with shared_database() as shared:
        yield shared


@pytest.fixture
def minds(
    tmp_path: Path, database: SharedDatabase, script_path: Path
) -> Iterator[list[MindProcess]]:
    # Short leases: the standby takes the first Mind's conversation over 2 s after its death.
    started = [
        database.mind(tmp_path / name, script_path, TOBE_MIND__LEASE_SECONDS="2")
        for name in ("mind-a", "mind-b")
    ]
    try:
        yield started
    finally:
        for mind in started:
            mind.kill()


@contextmanager
def face_in_front_of(mind: MindProcess, more: tuple[str, ...]) -> Iterator[FaceProcess]:
    """A Face dialling `mind` first, then the addresses of `more`; returns once SERVING."""
    face = FaceProcess(face_env(mind), mind.address, web=False, more_minds=more)
    try:
        face.start()
        yield face
    finally:
        face.kill()


async def chat(client: FaceClient, key: str, text: str) -> None:
    """One message sent through the Face, and its run followed to its end."""
    reply = await client.command(
        send_chat=face_pb2.SendChatCommand(conversation_key=key, text=text, idempotency_key=text)
    )
    assert reply.WhichOneof("result") == "send_chat", reply
    await client.wait_event(run_ended(reply.send_chat.run_id), timeout=60)


async def test_a_subscriber_follows_the_standby_mind_after_the_first_is_killed(
    minds: list[MindProcess],
) -> None:
    first, standby = minds
    first.start()
    standby_address = f"127.0.0.1:{free_port()}"
    with face_in_front_of(first, (standby_address,)) as face:
        client = await FaceClient.connect(face.address, first.client_tokens["alice"])
        try:
            await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
            created = await client.command(
                create_conversation=face_pb2.CreateConversationCommand(key="p_failover")
            )
            assert created.WhichOneof("result") == "create_conversation", created
            await chat(client, "p_failover", "before the failover")

            first.kill()
            standby.start(standby_address)
            await wait_for_line(face, f"{SWITCH} {first.address} to the Mind at {standby_address}")
            await wait_for_line(face, f", from the Mind at {standby_address}")
            await chat(client, "p_failover", "after the failover")

            direct = MindDirect(standby)
            try:
                truth = await direct.durable_events("alice")
            finally:
                await direct.close()
            # The same connection lived through the switch and got each durable event once.
            assert client.status is None
            received = [event for event in client.events if event.durable_id > 0]
            assert [e.durable_id for e in received] == [e.durable_id for e in truth]
            assert received == truth
        finally:
            await client.close()


async def test_a_face_whose_first_mind_is_unreachable_serves_through_the_next(
    minds: list[MindProcess],
) -> None:
    mind = minds[1]
    mind.start()
    unreachable = f"127.0.0.1:{free_port()}"
    face = FaceProcess(face_env(mind), unreachable, web=False, more_minds=(mind.address,))
    try:
        face.start()
        assert face.log_lines(f"{SWITCH} {unreachable} to the Mind at {mind.address}")
        client = await FaceClient.connect(face.address, mind.client_tokens["alice"])
        try:
            await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
            await client.command(
                create_conversation=face_pb2.CreateConversationCommand(key="p_second")
            )
            await chat(client, "p_second", "hello")
        finally:
            await client.close()
    finally:
        face.kill()
