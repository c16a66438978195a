"""A client credential does through the Face only what its scopes allow (real Mind and Face):
one holding only `approve` cannot chat, read or follow a conversation, and changes nothing by
trying; with `chat` the same commands work."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess, MindDirect, running_face
from helpers.mind_process import MindProcess, issue_token, running_mind

from tobe.v1 import face_pb2, mind_pb2

pytestmark = pytest.mark.e2e

DENIED = grpc.StatusCode.PERMISSION_DENIED.value[0]
KEY = "p_ann_notes"


@dataclass
class Stack:
    mind: MindProcess
    face: FaceProcess
    # Client credentials of principal ann: one holding only `approve`, one only `chat`.
    approver: str
    chatter: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    base = Path(tmp_path_factory.mktemp("face-scopes", numbered=True))
    with running_mind(base, script=None, clients=()) as mind, running_face(mind, web=False) as face:
        approver = issue_token(mind.url, kind="client", principal="ann", scopes=["approve"])
        chatter = issue_token(mind.url, kind="client", principal="ann", scopes=["chat"])
        yield Stack(mind, face, approver, chatter)


async def test_a_credential_holding_only_approve_cannot_chat(stack: Stack) -> None:
    mind, face = stack.mind, stack.face
    direct = MindDirect(mind)
    await direct.create(KEY, principal="ann")
    client = await FaceClient.connect(face.address, stack.approver)
    try:
        assert list(client.welcome.scopes) == ["approve"]
        sent = await client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key=KEY, text="hello from the approver", idempotency_key="a1"
            )
        )
        assert (sent.error.code, sent.error.message) == (
            DENIED,
            "this credential lacks scope 'chat' (needed for send_chat)",
        )
        read = await client.command(snapshot=face_pb2.SnapshotCommand(conversation_key=KEY))
        assert read.error.code == DENIED and "lacks scope 'chat'" in read.error.message
        followed = await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        assert (followed.error.code, followed.error.message) == (
            DENIED,
            "this credential lacks scope 'chat' (needed for subscribe)",
        )
    finally:
        await client.close()
    history = await direct.stub.GetHistory(
        mind_pb2.GetHistoryRequest(
            on_behalf_of=mind_pb2.OnBehalfOf(principal="ann", scopes=["chat"]),
            conversation_key=KEY,
            limit=100,
        ),
        metadata=mind.gateway_metadata,
        timeout=30,
    )
    assert [m for m in history.messages if "approver" in m.text] == []

    client = await FaceClient.connect(face.address, stack.chatter)
    try:
        sent = await client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key=KEY, text="hello from the chatter", idempotency_key="c1"
            )
        )
        assert not sent.HasField("error") and sent.send_chat.input_id
    finally:
        await client.close()
        await direct.close()


async def test_resuming_at_hello_without_chat_is_refused_and_sends_no_events(
    stack: Stack,
) -> None:
    client = await FaceClient.connect(stack.face.address, stack.approver, resume_after_id=1)
    try:
        refused = await client.reply("hello")
        assert (refused.error.code, refused.error.message) == (
            DENIED,
            "this credential lacks scope 'chat' (needed for subscribe)",
        )
        listed = await client.command(list_profiles=face_pb2.ListProfilesCommand())
        assert listed.error.code == DENIED
        assert client.events == []
    finally:
        await client.close()
