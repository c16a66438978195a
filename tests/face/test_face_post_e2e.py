"""Posting through real Face and Mind processes: the `post_message` command needs a credential
with scope `post`; its message reaches the conversation's clients as an assistant message
marked with who posted it, and `tobe chat` shows it as a reply, marked as posted."""

from __future__ import annotations

import io
import sys

import pexpect
import pytest
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess, issue_token

from tobe.v1 import common_pb2, events_pb2, face_pb2

pytestmark = pytest.mark.e2e
KEY = "p_posts"
PROMPT = "you› "
PERMISSION_DENIED = 7


@pytest.fixture
def poster_token(mind: MindProcess) -> str:
    """A second credential of alice's, allowed to post (the fixture's own have only `chat`)."""
    return issue_token(mind.url, kind="client", principal="alice", scopes=["chat", "post"])


def _post(text: str, idem: str) -> face_pb2.PostMessageCommand:
    return face_pb2.PostMessageCommand(conversation_key=KEY, text=text, idempotency_key=idem)


def _posted(event: events_pb2.Event) -> bool:
    return event.HasField("message_appended") and bool(event.message_appended.posted_by)


async def test_a_client_with_scope_post_posts_and_the_conversation_sees_it(
    mind: MindProcess, face: FaceProcess, poster_token: str
) -> None:
    alice = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    poster = await FaceClient.connect(face.address, poster_token)
    try:
        await alice.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await alice.command(create_conversation=face_pb2.CreateConversationCommand(key=KEY))
        reply = await poster.command(post_message=_post("Build finished.", "build-42"))
        assert reply.WhichOneof("result") == "post_message", reply
        assert not reply.post_message.queued and reply.post_message.message_id > 0
        event = await alice.wait_event(_posted)
        message = event.message_appended
        assert (message.role, message.text, message.posted_by, message.id) == (
            common_pb2.MESSAGE_ROLE_ASSISTANT,
            "Build finished.",
            "alice",
            reply.post_message.message_id,
        )
        again = await poster.command(post_message=_post("Build finished.", "build-42"))
        assert again.post_message.duplicate
        assert again.post_message.message_id == reply.post_message.message_id
    finally:
        await alice.close()
        await poster.close()


async def test_a_credential_without_scope_post_is_refused(
    mind: MindProcess, face: FaceProcess
) -> None:
    alice = await FaceClient.connect(face.address, mind.client_tokens["alice"])  # scope chat
    try:
        await alice.command(create_conversation=face_pb2.CreateConversationCommand(key=KEY))
        refused = await alice.command(post_message=_post("not mine to post", "k"))
        assert refused.error.code == PERMISSION_DENIED
        assert "scope 'post'" in refused.error.message
        snapshot = await alice.command(snapshot=face_pb2.SnapshotCommand(conversation_key=KEY))
        assert list(snapshot.snapshot.messages) == []
    finally:
        await alice.close()


async def test_tobe_chat_shows_a_posted_message_as_a_reply_marked_posted(
    mind: MindProcess, face: FaceProcess, poster_token: str
) -> None:
    alice = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    await alice.command(create_conversation=face_pb2.CreateConversationCommand(key=KEY))
    await alice.close()
    # Forking while a stream of this process is live can crash the child before it runs
    # `tobe chat` (gRPC skips its fork handlers then): the poster connects after the spawn.
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address, "--conversation", KEY],
        env={**face.env, "TOBE_CHAT_TOKEN": mind.client_tokens["alice"], "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 160),
    )
    chat.logfile_read = io.StringIO()
    poster = await FaceClient.connect(face.address, poster_token)
    try:
        chat.expect(PROMPT)
        chat.sendline("hello")
        chat.expect("echo reply")
        chat.expect(PROMPT)
        await poster.command(post_message=_post("Your report is ready.", "report-1"))
        chat.expect("posted by alice")
        chat.expect("Your report is ready.")
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)
        await poster.close()
