"""Quotes and forwarded records through real Face and Mind processes with the Scripted model:
a reply's reply_to and quote are stored and come back in the stream, the snapshot and the
history; the model's request starts the reply with the quote line and carries a forwarded
record's images after their items; a quote of a message elsewhere is refused, storing nothing;
`tobe chat` replies with `/reply ID text` and shows the quote line."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pexpect
import pytest
from helpers.face_client import FaceClient, run_ended
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import common_pb2, face_pb2, mind_pb2

pytestmark = pytest.mark.e2e
KEY, ELSEWHERE = "p_quotes", "p_elsewhere"
PNG = b"\x89PNG\r\n\x1a\n" + b"a-forwarded-picture-" * 8
GIF = b"GIF89a" + b"another-forwarded-one-" * 8
SCRIPT = """
runs:
  - match: "noon works"
    steps:
      - expect: {last_contains: "[quote alice: meet at noon?]\\nyes, noon works"}
        text: "quote seen"
  - match: "what do you make of it"
    steps:
      - expect:
          images: 2
          last_contains: "[forwarded chat record]\\nbob: look\\n[forwarded image 1]\\n\\
            carol: and this\\n[forwarded image 2]"
        text: "record seen"
  - match: ".*"
    steps:
      - text: "noted"
"""
VISION_MODEL = {"id": "eyes", "context_window": 100_000, "max_output": 256, "vision": True}


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    env = {"TOBE_PROVIDER__MODEL": "eyes", "TOBE_PROVIDER__MODELS": json.dumps([VISION_MODEL])}
    with running_mind(tmp_path, script=script, **env) as process:
        yield process


@pytest.fixture
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind) as process:
        yield process


def _inputs(mind: MindProcess) -> list[tuple[str, int | None]]:
    with sqlite3.connect(f"file:{mind.data_dir / 'tobe.db'}?mode=ro", uri=True) as db:
        return db.execute("SELECT idempotency_key, reply_to FROM inputs ORDER BY id").fetchall()


async def _answered(client: FaceClient, command: face_pb2.SendChatCommand) -> tuple[int, str]:
    """Send and wait for the run's end: the message id and the assistant's answer."""
    reply = await client.command(send_chat=command)
    assert reply.WhichOneof("result") == "send_chat", reply
    await client.wait_event(run_ended(reply.send_chat.run_id))
    appended = [e.message_appended for e in client.events if e.HasField("message_appended")]
    said = [
        m.text
        for m in appended
        if m.run_id == reply.send_chat.run_id and m.role == common_pb2.MESSAGE_ROLE_ASSISTANT
    ]
    return reply.send_chat.message_id, said[-1]


def _user(appended: list[common_pb2.Message], key: str) -> common_pb2.Message:
    return next(m for m in appended if m.idempotency_key == key)


async def test_a_reply_and_a_forwarded_record_reach_the_model_and_come_back_to_clients(
    mind: MindProcess, face: FaceProcess
) -> None:
    client = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        for key in (KEY, ELSEWHERE):
            await client.command(create_conversation=face_pb2.CreateConversationCommand(key=key))
        asked, _ = await _answered(
            client,
            face_pb2.SendChatCommand(
                conversation_key=KEY, text="meet at noon?", idempotency_key="a"
            ),
        )
        elsewhere, _ = await _answered(
            client,
            face_pb2.SendChatCommand(conversation_key=ELSEWHERE, text="hi", idempotency_key="e"),
        )
        _, quoted = await _answered(
            client,
            face_pb2.SendChatCommand(
                conversation_key=KEY, text="yes, noon works", idempotency_key="b", reply_to=asked
            ),
        )
        record = [
            common_pb2.ForwardedItemUpload(
                speaker="bob",
                text="look",
                images=[common_pb2.ImageUpload(media_type="image/png", data=PNG)],
            ),
            common_pb2.ForwardedItemUpload(
                speaker="carol",
                text="and this",
                images=[common_pb2.ImageUpload(media_type="image/gif", data=GIF)],
            ),
        ]
        _, forwarded = await _answered(
            client,
            face_pb2.SendChatCommand(
                conversation_key=KEY,
                text="what do you make of it?",
                idempotency_key="c",
                forwarded=record,
            ),
        )
        stored_before = _inputs(mind)
        refused = [
            await client.command(
                send_chat=face_pb2.SendChatCommand(
                    conversation_key=KEY, text="no", idempotency_key=f"bad{n}", reply_to=bad
                )
            )
            for n, bad in enumerate((elsewhere, 10_000))
        ]
        snapshot = (
            await client.command(snapshot=face_pb2.SnapshotCommand(conversation_key=KEY))
        ).snapshot
        history = (
            await client.command(
                mind=face_pb2.MindCall(get_history=mind_pb2.GetHistoryRequest(conversation_key=KEY))
            )
        ).mind.get_history
    finally:
        await client.close()

    # The Scripted model's expectations held: its request had the quote line and the record.
    assert (quoted, forwarded) == ("quote seen", "record seen")
    quote = common_pb2.Quote(message_id=asked, speaker="alice", text="meet at noon?")
    appended = [e.message_appended for e in client.events if e.HasField("message_appended")]
    for messages in (appended, list(snapshot.messages), list(history.messages)):
        reply = _user(messages, "b")
        assert (reply.reply_to, reply.quote) == (asked, quote)
        assert _user(messages, "a").reply_to == 0
        assert not _user(messages, "a").HasField("quote")
        items = _user(messages, "c").forwarded
        assert [(i.speaker, i.text, [r.media_type for r in i.images]) for i in items] == [
            ("bob", "look", ["image/png"]),
            ("carol", "and this", ["image/gif"]),
        ]
    # A quote of another conversation's message, or of none, is refused and stores nothing.
    for answer, bad in zip(refused, (elsewhere, 10_000), strict=True):
        assert answer.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert f"reply_to {bad} is not a message of this conversation" in answer.error.message
    assert _inputs(mind) == stored_before
    assert ("b", asked) in stored_before


def _chat(mind: MindProcess, face: FaceProcess) -> pexpect.spawn:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address],
        env={**face.env, "TOBE_CHAT_TOKEN": mind.client_tokens["alice"], "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    chat.logfile_read = io.StringIO()
    return chat


def test_slash_reply_in_tobe_chat_lists_ids_sends_the_quote_and_shows_it(
    mind: MindProcess, face: FaceProcess
) -> None:
    chat = _chat(mind, face)
    try:
        chat.expect("you› ")
        chat.sendline("meet at noon?")
        chat.expect("noted")
        chat.expect("you› ")
        chat.sendline("/reply")
        chat.expect(r"#(\d+) \S*you: meet at noon\?")
        asked = chat.match.group(1)
        chat.expect(r"#\d+ \S*ToBe: noted")
        chat.sendline("/reply x yes")
        chat.expect(r"usage: /reply ID text")
        chat.sendline("/reply 99999 yes")
        chat.expect(r"reply_to 99999 is not a message of this conversation")
        chat.sendline(f"/reply {asked} yes, noon works")
        chat.expect("> alice: meet at noon\\?")
        chat.expect("quote seen")
        chat.expect("you› ")
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)

    # Reopened, the history shows the quote line before the quoting message.
    again = _chat(mind, face)
    try:
        again.expect(r"> alice: meet at noon\?[^›]*you› \S*yes, noon works")
        again.sendline("/quit")
        again.expect(pexpect.EOF)
    finally:
        again.close(force=True)
