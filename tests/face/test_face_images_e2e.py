"""Images through real Face and Mind processes with the Scripted model: stored once by digest,
shown everywhere as references (never bytes), seen by a vision model, replaced by a
placeholder for a blind one, and sent from `tobe chat` with `/image`."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from helpers.face_client import FaceClient, run_ended
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, running_mind
from helpers.store_backend import rows

from tobe.v1 import common_pb2, events_pb2, face_pb2

pytestmark = pytest.mark.e2e
KEY = "p_pictures"
# A PNG signature followed by bytes that occur nowhere else, to look for them.
PNG = b"\x89PNG\r\n\x1a\n" + b"only-in-this-image-" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"a-jpeg-body-" * 16
SCRIPT = """
runs:
  - match: "take your time"
    steps:
      - tool_calls: [{name: wait, arguments: {seconds: 120}}]
      - text: "waited"
  - match: "what is in"
    steps:
      - expect: {last_role: user, last_contains: "what is in", images: 1}
        text: "one picture seen"
  - match: "blind"
    steps:
      - expect: {images: 0, last_contains: "[image: the current model cannot see images]"}
        text: "placeholder seen"
  - match: ".*"
    steps:
      - expect: {images: 1}
        text: "a picture without words"
"""
VISION_MODEL = {"id": "eyes", "context_window": 100_000, "max_output": 256, "vision": True}


def _mind(tmp_path: Path, **env: str) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script, **env) as process:
        yield process


@pytest.fixture
def vision_mind(tmp_path: Path) -> Iterator[MindProcess]:
    yield from _mind(
        tmp_path, TOBE_PROVIDER__MODEL="eyes", TOBE_PROVIDER__MODELS=json.dumps([VISION_MODEL])
    )


@pytest.fixture
def vision_face(vision_mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(vision_mind) as process:
        yield process


@pytest.fixture
def blind_mind(tmp_path: Path) -> Iterator[MindProcess]:
    """The Scripted model without a model entry: it cannot see images."""
    yield from _mind(tmp_path)


@pytest.fixture
def blind_face(blind_mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(blind_mind) as process:
        yield process


def _media_rows(mind: MindProcess) -> list[tuple[str, str, int]]:
    return rows(mind.url, "SELECT digest, media_type, size_bytes FROM media")


def _send(key: str, text: str, idem: str, *images: tuple[str, bytes]) -> face_pb2.SendChatCommand:
    return face_pb2.SendChatCommand(
        conversation_key=key,
        text=text,
        idempotency_key=idem,
        images=[common_pb2.ImageUpload(media_type=t, data=d) for t, d in images],
    )


async def _answered(client: FaceClient, command: face_pb2.SendChatCommand) -> str:
    """Send and wait for the run's end; the assistant's text."""
    reply = await client.command(send_chat=command)
    assert reply.WhichOneof("result") == "send_chat", reply
    await client.wait_event(run_ended(reply.send_chat.run_id))
    return _assistant_text(client, reply.send_chat.run_id)


def _assistant_text(client: FaceClient, run_id: str) -> str:
    appended = [e.message_appended for e in client.events if e.HasField("message_appended")]
    said = [
        m for m in appended if m.run_id == run_id and m.role == common_pb2.MESSAGE_ROLE_ASSISTANT
    ]
    return said[-1].text if said else ""


async def test_an_image_sent_through_face_is_stored_once_and_shown_as_a_reference_everywhere(
    vision_mind: MindProcess, vision_face: FaceProcess
) -> None:
    client = await FaceClient.connect(vision_face.address, vision_mind.client_tokens["alice"])
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await client.command(create_conversation=face_pb2.CreateConversationCommand(key=KEY))
        first = await _answered(client, _send(KEY, "what is in it?", "a", ("image/png", PNG)))
        second = await _answered(client, _send(KEY, "", "b", ("image/png", PNG)))
        snapshot = (
            await client.command(snapshot=face_pb2.SnapshotCommand(conversation_key=KEY))
        ).snapshot
        replay = (await client.command(replay=face_pb2.ReplayCommand(conversation_key=KEY))).replay
    finally:
        await client.close()

    # The vision model got the image as an image (its expectation counted one) both times.
    assert (first, second) == ("one picture seen", "a picture without words")
    digest = hashlib.sha256(PNG).hexdigest()
    assert _media_rows(vision_mind) == [(digest, "image/png", len(PNG))]
    ref = common_pb2.ImageRef(digest=digest, media_type="image/png", size_bytes=len(PNG))
    users = [e.message_appended for e in client.events if e.HasField("message_appended")]
    users = [m for m in users if m.role == common_pb2.MESSAGE_ROLE_USER]
    assert [(m.text, list(m.images)) for m in users] == [("what is in it?", [ref]), ("", [ref])]
    for messages in (snapshot.messages, replay.messages):
        shown = [m for m in messages if m.role == common_pb2.MESSAGE_ROLE_USER]
        assert [list(m.images) for m in shown] == [[ref], [ref]]
    # Bytes never travel back: not in any frame, nor in the Mind's log.
    sent = b"".join(e.SerializeToString() for e in client.events)
    sent += snapshot.SerializeToString() + replay.SerializeToString()
    for form in (PNG[8:40], base64.b64encode(PNG)[16:48]):
        assert form not in sent
    assert base64.b64encode(PNG)[16:48].decode() not in "".join(vision_mind.output)


async def test_an_image_queued_behind_a_run_keeps_its_image_until_delivered(
    vision_mind: MindProcess, vision_face: FaceProcess
) -> None:
    client = await FaceClient.connect(vision_face.address, vision_mind.client_tokens["alice"])
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await client.command(create_conversation=face_pb2.CreateConversationCommand(key=KEY))
        await client.command(send_chat=_send(KEY, "take your time", "slow"))
        queued = await client.command(send_chat=_send(KEY, "what is in", "q", ("image/png", PNG)))
        assert queued.send_chat.queued
        await client.command(cancel_run=face_pb2.CancelRunCommand(conversation_key=KEY))

        def delivered(event: events_pb2.Event) -> bool:
            message = event.message_appended
            return event.HasField("message_appended") and message.text == "one picture seen"

        await client.wait_event(delivered)
    finally:
        await client.close()


async def test_a_blind_model_gets_the_placeholder_instead_of_the_image(
    blind_mind: MindProcess, blind_face: FaceProcess
) -> None:
    client = await FaceClient.connect(blind_face.address, blind_mind.client_tokens["alice"])
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await client.command(create_conversation=face_pb2.CreateConversationCommand(key=KEY))
        said = await _answered(client, _send(KEY, "blind", "b", ("image/jpeg", JPEG)))
    finally:
        await client.close()
    assert said == "placeholder seen"


@pytest.fixture
def strict_mind(tmp_path: Path) -> Iterator[MindProcess]:
    """A Mind that takes images no larger than PNG."""
    yield from _mind(tmp_path, TOBE_MIND__MAX_IMAGE_BYTES=str(len(PNG)))


@pytest.fixture
def strict_face(strict_mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(strict_mind) as process:
        yield process


async def test_a_mislabelled_or_oversized_image_is_refused_naming_it_and_stores_nothing(
    strict_mind: MindProcess, strict_face: FaceProcess
) -> None:
    client = await FaceClient.connect(strict_face.address, strict_mind.client_tokens["alice"])
    try:
        await client.command(create_conversation=face_pb2.CreateConversationCommand(key=KEY))
        images = [("image/png", PNG), ("image/png", JPEG)]
        mislabelled = await client.command(send_chat=_send(KEY, "x", "m", *images))
        big = await client.command(send_chat=_send(KEY, "x", "b", ("image/png", PNG + b"!")))
    finally:
        await client.close()
    assert mislabelled.error.code == 3  # INVALID_ARGUMENT
    assert "image 1 is declared 'image/png' but its content is 'image/jpeg'" in (
        mislabelled.error.message
    )
    assert big.error.code == 3 and "image 0 is" in big.error.message
    assert "mind.max_image_bytes" in big.error.message
    assert _media_rows(strict_mind) == []


def test_slash_image_in_tobe_chat_sends_the_file_and_the_transcript_shows_it(
    vision_mind: MindProcess, vision_face: FaceProcess, tmp_path: Path
) -> None:
    photo = tmp_path / "photo.png"
    photo.write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("not an image")
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", vision_face.address],
        env={
            **vision_face.env,
            "TOBE_CHAT_TOKEN": vision_mind.client_tokens["alice"],
            "TERM": "xterm",
        },
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    chat.logfile_read = io.StringIO()
    try:
        chat.expect("you› ")
        chat.sendline(f"/image {tmp_path / 'missing.png'}")
        chat.expect("no such file: ")
        chat.sendline(f"/image {tmp_path / 'notes.txt'}")
        chat.expect(r"notes.txt is not a PNG, JPEG, WebP or GIF image")
        chat.sendline(f"/image {photo} what is in this photo?")
        chat.expect(r"\[image: photo.png, 1 KB\]")
        chat.expect("one picture seen")
        chat.expect("you› ")
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)

    # Reopened, the replayed history marks the message that carried an image.
    again = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", vision_face.address],
        env={
            **vision_face.env,
            "TOBE_CHAT_TOKEN": vision_mind.client_tokens["alice"],
            "TERM": "xterm",
        },
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    try:
        again.expect(r"you› \S*\[image\] what is in this photo\?")
        again.expect("you› ")
        again.sendline("/quit")
        again.expect(pexpect.EOF)
    finally:
        again.close(force=True)
    assert [row[0] for row in _media_rows(vision_mind)] == [hashlib.sha256(PNG).hexdigest()]
