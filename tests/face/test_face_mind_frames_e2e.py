"""Every Mind call a client may make reaches the real Mind through the real Face as a `mind`
frame, and is answered exactly as the older command frame of the same call is: the same result,
or the Mind's own status code and message passed through."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import issue_token, running_mind

from face.forwarding import FORWARDED
from tobe.scopes import FACE_COMMANDS
from tobe.v1 import face_pb2

pytestmark = pytest.mark.e2e

# The older command frame of each Mind call.
OLDER = {method: frame for frame, method in FACE_COMMANDS.items()}
# A conversation nobody has: calls naming it answer the Mind's refusal.
MISSING = "p_nobody_has_this"


@pytest.fixture(scope="module")
def face(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FaceProcess, str]]:
    base = Path(tmp_path_factory.mktemp("face-mind-frames", numbered=True))
    with running_mind(base, script=None, clients=()) as mind, running_face(mind, web=False) as face:
        token = issue_token(
            mind.url, kind="client", principal="ann", scopes=["chat", "approve", "post"]
        )
        yield face, token


def naming_missing_conversation(message: Message) -> Message:
    """`message` about a conversation nobody has, otherwise well formed (so the refusal is
    about the conversation, whatever else the call checks first)."""
    fields = message.DESCRIPTOR.fields_by_name
    if "conversation_key" in fields:
        message.conversation_key = MISSING  # type: ignore[attr-defined]
    if "digest" in fields:
        message.digest = "0" * 64  # type: ignore[attr-defined]
    if "title" in fields:
        message.title = "a title"  # type: ignore[attr-defined]
    if "widget_id" in fields:
        message.widget_id = "w_" + "0" * 24  # type: ignore[attr-defined]
    if "message_id" in fields:
        message.message_id = 1  # type: ignore[attr-defined]
    return message


def outcome(reply: face_pb2.Reply, answered: bool) -> tuple[object, ...]:
    """What a reply says, leaving out what differs between two calls (new keys, codes)."""
    if reply.WhichOneof("result") == "error":
        return ("error", reply.error.code, reply.error.message)
    return ("answered", answered)


@pytest.mark.parametrize(
    "field", sorted(field for field, call in FORWARDED.items() if call.method in OLDER)
)
async def test_a_mind_frame_is_answered_like_the_older_frame_of_its_call(
    face: tuple[FaceProcess, str], field: str
) -> None:
    process, token = face
    call = FORWARDED[field]
    older_frame = OLDER[call.method]
    command = face_pb2.ConnectRequest.DESCRIPTOR.fields_by_name[older_frame].message_type
    client = await FaceClient.connect(process.address, token)
    try:
        mind_call = face_pb2.MindCall()
        getattr(mind_call, field).CopyFrom(naming_missing_conversation(call.request_type()))
        forwarded = await client.command(mind=mind_call)
        older = await client.command(
            **{older_frame: naming_missing_conversation(GetMessageClass(command)())}
        )
    finally:
        await client.close()
    assert outcome(forwarded, forwarded.mind.WhichOneof("call") == field) == outcome(
        older, older.WhichOneof("result") == older_frame
    )


@pytest.mark.parametrize(
    "field", sorted(field for field, call in FORWARDED.items() if call.method not in OLDER)
)
async def test_a_call_with_no_older_frame_passes_the_minds_refusal_through(
    face: tuple[FaceProcess, str], field: str
) -> None:
    process, token = face
    client = await FaceClient.connect(process.address, token)
    try:
        mind_call = face_pb2.MindCall()
        getattr(mind_call, field).CopyFrom(
            naming_missing_conversation(FORWARDED[field].request_type())
        )
        reply = await client.command(mind=mind_call)
    finally:
        await client.close()
    assert reply.WhichOneof("result") == "error"
    if "conversation_key" in FORWARDED[field].request_type.DESCRIPTOR.fields_by_name:
        assert f"no conversation {MISSING!r}" in reply.error.message
    else:  # a call about no one conversation: the Mind's refusal of the empty request
        assert reply.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0], reply.error
        assert reply.error.message
