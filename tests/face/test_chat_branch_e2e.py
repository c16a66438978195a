"""`/branch` in `tobe chat`, through a pseudo-terminal against real Face and Mind processes:
it branches at the last message or at a message id `/reply` lists, opens the branch and says
where it came from; the branch holds the history up to there, its origin all of its own."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator

import pexpect
import pytest
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, running_mind
from helpers.store_backend import rows

pytestmark = pytest.mark.e2e
PROMPT = "you› "
SCRIPT = """
runs:
  - match: ".*"
    steps:
      - {text: "echo reply"}
"""
# The rule drawn over a conversation `tobe chat` opens: `title (key)`.
OPENED = r"\x1b\[1m([^\r\n\x1b]*) \((p_[\w-]+)\)"


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    root = tmp_path_factory.mktemp("chat-branch")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(root, script=script, clients=("alice",)) as process:
        yield process


@pytest.fixture(scope="module")
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind) as process:
        yield process


@pytest.fixture
def chat(mind: MindProcess, face: FaceProcess) -> Iterator[pexpect.spawn]:
    # The store is read with SQLAlchemy only: gRPC threads here would make the fork unsafe.
    child = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address],
        env={**face.env, "TOBE_CHAT_TOKEN": mind.client_tokens["alice"], "TERM": "xterm"},
        encoding="utf-8",
        timeout=20,
        dimensions=(40, 160),
    )
    child.logfile_read = io.StringIO()
    try:
        yield child
    finally:
        child.sendline("/quit")
        child.expect(pexpect.EOF)
        child.close(force=True)


def _opened(chat: pexpect.spawn) -> tuple[str, str]:
    chat.expect(OPENED)
    title, key = chat.match.group(1), chat.match.group(2)
    chat.expect(PROMPT)
    return title, key


def _say(chat: pexpect.spawn, text: str) -> None:
    chat.sendline(text)
    chat.expect("echo reply")
    chat.expect(PROMPT)


def _texts(mind: MindProcess, key: str) -> list[str]:
    found = rows(mind.url, "SELECT text FROM messages WHERE conversation_key = ? ORDER BY id", key)
    return [text for (text,) in found]


def test_branch_opens_a_conversation_holding_the_history_up_to_the_message_named(
    mind: MindProcess, chat: pexpect.spawn
) -> None:
    _opened(chat)
    chat.sendline("/new trip")
    _title, trip = _opened(chat)
    _say(chat, "first idea")
    _say(chat, "second idea")
    chat.sendline("/reply")
    chat.expect(r"#(\d+) \x1b\[0mToBe: echo reply")
    first_reply = chat.match.group(1)
    chat.expect(PROMPT)

    chat.sendline(f"/branch #{first_reply}")
    chat.expect(OPENED)
    title, branch = chat.match.group(1), chat.match.group(2)
    chat.expect(f"branched from {trip} at message #{first_reply}")
    chat.expect(PROMPT)
    assert title == "trip (branch)" and branch != trip
    assert _texts(mind, branch) == ["first idea", "echo reply"]

    _say(chat, "a third way")
    chat.sendline("/branch")
    _title, again = _opened(chat)
    assert _texts(mind, again) == ["first idea", "echo reply", "a third way", "echo reply"]
    assert _texts(mind, trip) == ["first idea", "echo reply", "second idea", "echo reply"]

    chat.sendline("/branch later")
    chat.expect("usage: /branch \\[ID\\]")
    chat.sendline("/branch 999999")
    chat.expect("no message 999999")
    chat.sendline("/help")
    chat.expect("/branch \\[ID\\]")
    chat.expect(PROMPT)
