"""A client compacts its conversation through real Face and Mind processes: the reply says what
was summarised, and the durable `context_compacted` event reaches its stream and a replay."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from helpers.face_client import FaceClient, run_ended
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import events_pb2, face_pb2

pytestmark = pytest.mark.e2e
KEY = "p_compact"
CHATS = 6
PROMPT = "you› "
SCRIPT = """
runs:
  - match: "take your time"
    steps:
      - tool_calls: [{name: wait, arguments: {seconds: 120}}]
      - text: "waited"
  - match: ".*"
    steps:
      - {text: "echo reply", chunks: 2}
"""


def model_window(window: int) -> dict[str, str]:
    """Settings of a Mind whose model has a known context window, which compaction needs (a
    window this large leaves a few chats far from the budget: only a request compacts)."""
    model = {"id": "roomy", "context_window": window, "max_output": 256}
    return {"TOBE_PROVIDER__MODEL": "roomy", "TOBE_PROVIDER__MODELS": json.dumps([model])}


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script, **model_window(100_000)) as process:
        yield process


def compacted(event: events_pb2.Event) -> bool:
    return event.HasField("context_compacted")


async def chat(client: FaceClient, count: int) -> None:
    """`count` messages, each answered (the run ended) before the next is sent."""
    for n in range(count):
        reply = await client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key=KEY, text=f"message {n}", idempotency_key=f"chat-{n}"
            )
        )
        await client.wait_event(run_ended(reply.send_chat.run_id))


async def test_a_requested_compaction_is_answered_and_streamed_as_its_event(
    mind: MindProcess, face: FaceProcess
) -> None:
    token = mind.client_tokens["alice"]
    client = await FaceClient.connect(face.address, token)
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await client.command(
            create_conversation=face_pb2.CreateConversationCommand(key=KEY, title="long")
        )
        await chat(client, CHATS)
        reply = await client.command(compact=face_pb2.CompactCommand(conversation_key=KEY))
        assert reply.WhichOneof("result") == "compact", reply
        compaction = reply.compact.compaction
        assert compaction.generation == 1 and compaction.messages_summarised > 0
        assert compaction.trigger == events_pb2.COMPACTION_TRIGGER_REQUESTED
        assert compaction.tokens_after < compaction.tokens_before
        event = await client.wait_event(compacted)
        assert (event.conversation_key, event.context_compacted) == (KEY, compaction)
        assert event.durable_id > 0
    finally:
        await client.close()

    # A client resuming from the start replays it like any durable event.
    later = await FaceClient.connect(face.address, token)
    try:
        await later.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        replayed = await later.wait_event(compacted)
        assert replayed.context_compacted == compaction
    finally:
        await later.close()


async def test_another_principal_cannot_compact_the_conversation(
    mind: MindProcess, face: FaceProcess
) -> None:
    alice = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    bob = await FaceClient.connect(face.address, mind.client_tokens["bob"])
    try:
        await alice.command(create_conversation=face_pb2.CreateConversationCommand(key=KEY))
        refused = await bob.command(compact=face_pb2.CompactCommand(conversation_key=KEY))
        assert (refused.error.code, refused.error.message) == (5, f"no conversation {KEY!r}")
    finally:
        await alice.close()
        await bob.close()


def test_slash_compact_in_tobe_chat_says_what_was_summarised(
    mind: MindProcess, face: FaceProcess
) -> None:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address],
        env={**face.env, "TOBE_CHAT_TOKEN": mind.client_tokens["alice"], "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    chat.logfile_read = io.StringIO()
    try:
        chat.expect(PROMPT)
        for n in range(CHATS):
            chat.sendline(f"message {n}")
            chat.expect("echo reply")
            chat.expect(PROMPT)
        chat.sendline("/compact")
        chat.expect(r"compacted: \d+ messages? summarised \(generation 1\); context ~")
        chat.expect(PROMPT)
        # The next reply's events come after the compaction's on the stream.
        chat.sendline("after compacting")
        chat.expect("echo reply")
        chat.expect(PROMPT)
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)
    # The reply and the event it announces make one line, not two.
    assert chat.logfile_read.getvalue().count("(generation 1)") == 1


async def test_a_compaction_waiting_for_a_run_holds_back_no_later_command_of_its_connection(
    mind: MindProcess, face: FaceProcess
) -> None:
    client = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await client.command(create_conversation=face_pb2.CreateConversationCommand(key=KEY))
        await chat(client, CHATS)
        await client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key=KEY, text="take your time", idempotency_key="slow"
            )
        )
        compact = await client.send(compact=face_pb2.CompactCommand(conversation_key=KEY))
        cancel = await client.send(cancel_run=face_pb2.CancelRunCommand(conversation_key=KEY))
        answered: dict[str, face_pb2.Reply] = {}
        while len(answered) < 2:
            frame = await client.next_frame()
            if frame.HasField("reply"):
                answered[frame.reply.request_id] = frame.reply
        # The cancel was answered first: it ended the run the compaction was waiting for.
        assert list(answered) == [cancel, compact]
        assert answered[cancel].WhichOneof("result") == "cancel_run"
        assert answered[compact].compact.compaction.generation == 1
    finally:
        await client.close()
