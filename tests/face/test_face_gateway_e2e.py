"""Face and Mind as real processes, driven by real gRPC clients."""

from __future__ import annotations

import uuid

import pytest
from helpers.face_client import FaceClient, run_ended
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess

from tobe.v1 import common_pb2, face_pb2

pytestmark = pytest.mark.e2e
TRANSPARENT = common_pb2.DETAIL_MODE_TRANSPARENT
SUMMARY = common_pb2.DETAIL_MODE_SUMMARY
NOT_FOUND = 5


async def chat(client: FaceClient, key: str, text: str) -> str:
    reply = await client.command(
        send_chat=face_pb2.SendChatCommand(
            conversation_key=key, text=text, idempotency_key=uuid.uuid4().hex
        )
    )
    assert reply.WhichOneof("result") == "send_chat", reply
    return reply.send_chat.run_id


async def subscribed(client: FaceClient, after_id: int = 0) -> None:
    reply = await client.command(subscribe=face_pb2.SubscribeCommand(after_id=after_id))
    assert reply.HasField("subscribe"), reply
    await client.wait_frame(lambda f: f.HasField("replay_done"))


async def test_two_connections_of_one_principal_see_the_same_durable_events(
    mind: MindProcess, face: FaceProcess
) -> None:
    first = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    second = await FaceClient.connect(face.address, mind.client_tokens["alice"], mode=SUMMARY)
    bob = await FaceClient.connect(face.address, mind.client_tokens["bob"])
    try:
        for client in (first, second, bob):
            await subscribed(client)
        created = await first.command(
            create_conversation=face_pb2.CreateConversationCommand(key="p_alice", title="mine")
        )
        assert created.create_conversation.conversation.owner == "alice"
        run_id = await chat(first, "p_alice", "hello")
        for client in (first, second):
            await client.wait_event(run_ended(run_id))
        assert first.durable_ids() == second.durable_ids()
        assert len(first.durable_ids()) >= 4
        assert first.durable_ids() == sorted(set(first.durable_ids()))

        # Bob can neither see nor command Alice's conversation.
        for command in (
            {"snapshot": face_pb2.SnapshotCommand(conversation_key="p_alice")},
            {
                "send_chat": face_pb2.SendChatCommand(
                    conversation_key="p_alice", text="hi", idempotency_key="k1"
                )
            },
            {"replay": face_pb2.ReplayCommand(conversation_key="p_alice")},
        ):
            reply = await bob.command(**command)
            assert reply.error.code == NOT_FOUND, reply
        await bob.command(create_conversation=face_pb2.CreateConversationCommand(key="p_bob"))
        await bob.wait_event(lambda e: e.conversation_key == "p_bob")
        assert {e.conversation_key for e in bob.events} == {"p_bob"}
    finally:
        for client in (first, second, bob):
            await client.close()
