"""`tobe chat` through a pseudo-terminal against real Face and Mind processes: it opens the
person's own conversation (never the Awareness one the Mind made), `/new`, `/list` and
`/switch`, `/pair`, and what a tool turn leaves on the screen, live and when the conversation is
opened again (the screen is a VT100 emulator fed everything the chat printed)."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator

import grpc
import pexpect
import pytest
from helpers.approving_hand import laptop_hand
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, issue_token, running_mind
from helpers.ports import free_port
from helpers.screen import screen_lines

from tobe.v1 import face_pb2

pytestmark = pytest.mark.e2e
PROMPT = "you› "
ROWS, COLUMNS = 40, 160
AWARENESS = "p_awareness"
SCRIPT = """
runs:
  - match: "^save"
    steps:
      - tool_calls:
          - name: laptop__save_note
            arguments: {name: "a.txt"}
      - {text: "saved it"}
  - match: "^time"
    steps:
      - thinking: "I should look at the clock."
        text: "Let me check."
        chunks: 3
        tool_calls:
          - name: current_time
            arguments: {timezone: "UTC"}
      - {text: "Done: here is the time.", chunks: 2}
  - match: "^wait"
    steps:
      - text: "Waiting a second."
        tool_calls:
          - name: wait
            arguments: {seconds: 1}
      - text: "Done waiting."
  - match: ".*"
    steps:
      - {text: "echo reply", chunks: 2}
"""
# The rule `tobe chat` draws over a conversation it opens: `title (key)` in bold, then the
# kind when it is not a chat.
OPENED = r"\x1b\[1m([^\r\n\x1b]*) \((p_[\w-]+)\)( \[awareness\])?"


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    """A Mind that, like `tobe up`, makes alice's Awareness conversation when it starts (the
    Awareness it routes from is not running: nothing here needs an observation)."""
    root = tmp_path_factory.mktemp("chat-conversations")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(
        root,
        script=script,
        clients=("alice",),
        TOBE_MIND__AWARENESS_ADDRESS=f"127.0.0.1:{free_port()}",
        TOBE_MIND__AWARENESS_OWNER="alice",
    ) as process:
        yield process


@pytest.fixture(scope="module")
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind) as process:
        yield process


@pytest.fixture(scope="module")
def owner_token(mind: MindProcess) -> str:
    """alice's credential with the scope that decides approvals."""
    return issue_token(mind.url, kind="client", principal="alice", scopes=["chat", "approve"])


@pytest.fixture(scope="module")
def laptop(mind: MindProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with laptop_hand(mind, tmp_path_factory.mktemp("laptop")):
        yield


def _chat(mind: MindProcess, face: FaceProcess, *options: str, token: str = "") -> pexpect.spawn:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address, *options],
        env={
            **face.env,
            "TOBE_CHAT_TOKEN": token or mind.client_tokens["alice"],
            "TERM": "xterm",
        },
        encoding="utf-8",
        timeout=20,
        dimensions=(ROWS, COLUMNS),
    )
    chat.logfile_read = io.StringIO()
    return chat


def _opened(chat: pexpect.spawn) -> tuple[str, str, bool]:
    """(title, key, is an awareness conversation) of the conversation the chat opened."""
    chat.expect(OPENED)
    match = chat.match
    chat.expect(PROMPT)
    return match.group(1), match.group(2), bool(match.group(3))


def _quit(chat: pexpect.spawn) -> list[str]:
    """Leave; the lines the terminal shows."""
    chat.sendline("/quit")
    chat.expect(pexpect.EOF)
    chat.close(force=True)
    return screen_lines(chat.logfile_read.getvalue(), COLUMNS, ROWS)


def _listed(lines: list[str]) -> list[list[str]]:
    """The rows of the last `/list`: number, current mark, key, title, kind."""
    start = max(i for i, line in enumerate(lines) if line.endswith("/list"))
    rows = []
    for line in lines[start + 2 :]:
        if line.startswith(PROMPT):
            break
        rows.append(line.split())
    return rows


def test_chat_opens_the_persons_own_conversations_and_switches_between_them(
    mind: MindProcess, face: FaceProcess
) -> None:
    # What the user hit: the Awareness conversation was the newest one and `tobe chat`
    # opened it; now it starts a conversation of the person's own.
    chat = _chat(mind, face)
    try:
        _title, first, awareness = _opened(chat)
        assert first != AWARENESS and not awareness
        chat.sendline("/new plans")
        title, plans, _ = _opened(chat)
        assert title == "plans"
        chat.sendline("/list")
        chat.expect(PROMPT)
        chat.sendline("/switch 3")
        title, key, awareness = _opened(chat)
        assert (key, awareness) == (AWARENESS, True)
        chat.sendline(f"/switch {first}")
        assert _opened(chat)[1] == first
        chat.sendline("/switch 9")
        chat.expect("no conversation 9 in the list; /list shows 3")
        chat.sendline("/help")
        chat.expect("/switch N\\|KEY")
        chat.expect(PROMPT)
    finally:
        lines = _quit(chat)
    # Numbered, newest first, the current one marked, the awareness one said so.
    assert _listed(lines) == [
        ["1", "*", plans, "plans", "chat"],
        ["2", first, "chat"],
        ["3", AWARENESS, "Awareness", "awareness"],
    ]
    # Started again, it opens the newest of the person's own conversations.
    again = _chat(mind, face)
    try:
        assert _opened(again)[1] == plans
    finally:
        _quit(again)


def test_pair_prints_a_one_time_code_and_the_sign_in_link_of_this_faces_web_client(
    mind: MindProcess, face: FaceProcess
) -> None:
    chat = _chat(mind, face)
    try:
        _opened(chat)
        chat.sendline("/pair")
        chat.expect(r"pairing code ([0-9A-Z]{5}-[0-9A-Z]{5}) signs a device in as alice")
        code = chat.match.group(1)
        chat.expect(r"open (\S+) in a browser to sign it in")
        url = chat.match.group(1)
        chat.expect(r"it works once, until \d\d:\d\d:\d\d \(in 5 min\)")
        chat.expect(PROMPT)
    finally:
        _quit(chat)
    assert url == f"http://{face.web_address}/#pair={code}"


def test_a_tool_turn_shows_its_texts_once_and_leaves_no_spinner(
    mind: MindProcess, face: FaceProcess
) -> None:
    chat = _chat(mind, face)
    try:
        _opened(chat)
        chat.sendline("/new tools")
        _opened(chat)
        chat.sendline("time now")
        chat.expect("Done: here is the time.")
        chat.expect(PROMPT)
        chat.sendline("wait a second")
        chat.expect("waited")  # the wait tool's progress, beside its spinner
        chat.expect("Done waiting.")
        chat.expect(PROMPT)
    finally:
        lines = _quit(chat)
    # Each line once, in order: no text printed twice, no spinner left behind.
    turn = lines[lines.index(f"{PROMPT}time now") :]
    starts = [
        f"{PROMPT}time now",
        "Let me check.",
        '⚙ current_time {"timezone": "UTC"}',
        '✓ current_time {"utc":',
        "Done: here is the time.",
        f"{PROMPT}wait a second",
        "Waiting a second.",
        '⚙ wait {"seconds": 1}',
        "✓ wait ",
        "Done waiting.",
        f"{PROMPT}/quit",
    ]
    assert len(turn) == len(starts), turn
    assert all(line.startswith(start) for line, start in zip(turn, starts, strict=True)), turn


def test_a_conversation_opened_again_shows_its_tool_calls_and_results(
    mind: MindProcess, face: FaceProcess
) -> None:
    chat = _chat(mind, face)
    try:
        _opened(chat)
        chat.sendline("/new history")
        _title, key, _ = _opened(chat)
        chat.sendline("time again")
        chat.expect("Done: here is the time.")
        chat.expect(PROMPT)
    finally:
        live = _quit(chat)
    again = _chat(mind, face, "--conversation", key)
    try:
        _opened(again)
    finally:
        replayed = _quit(again)

    def turn(lines: list[str]) -> list[str]:
        start = lines.index(f"{PROMPT}time again")
        return lines[start : lines.index("Done: here is the time.", start) + 1]

    assert turn(replayed) == turn(live)
    assert turn(replayed)[2] == '⚙ current_time {"timezone": "UTC"}'
    assert turn(replayed)[3].startswith('✓ current_time {"utc":')


@pytest.mark.usefixtures("laptop")
def test_an_approval_shows_what_is_decided_and_how_to_answer_and_the_run_goes_on(
    mind: MindProcess, face: FaceProcess, owner_token: str
) -> None:
    chat = _chat(mind, face, token=owner_token)
    try:
        _opened(chat)
        chat.sendline("/new approvals")
        _opened(chat)
        chat.sendline("save a note")
        chat.expect(
            "answer y = approve once, a = always in this conversation, n \\[reason\\] = deny"
        )
        chat.expect("approve\\? ")
        chat.sendline("y")
        chat.expect("saved it")
        chat.expect(PROMPT)
    finally:
        lines = _quit(chat)
    # The call, what is decided on and how to answer, the answer, then the result: the
    # spinner never drawn over the question nor left behind.
    turn = [line for line in lines[lines.index(f"{PROMPT}save a note") :] if line[0] != " "]
    starts = [
        f"{PROMPT}save a note",
        "⚙ laptop__save_note on h_",
        "approval ap_",
        "approve? [y]es once / [a]lways here / [n]o [reason]: y",
        "approval ap_",
        "✓ laptop__save_note saved a.txt",
        "saved it",
        f"{PROMPT}/quit",
    ]
    assert len(turn) == len(starts), turn
    assert all(line.startswith(start) for line, start in zip(turn, starts, strict=True)), turn
    assert "waiting for a decision" in turn[2] and "approved once" in turn[4]
    assert '  laptop__save_note {"name":"a.txt"}' in lines


async def test_listing_an_unknown_kind_is_refused_naming_the_kinds(
    mind: MindProcess, face: FaceProcess
) -> None:
    client = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        refused = await client.command(
            list_conversations=face_pb2.ListConversationsCommand(kinds=["chat", "email"])
        )
        awareness = await client.command(
            list_conversations=face_pb2.ListConversationsCommand(kinds=["awareness"])
        )
    finally:
        await client.close()
    assert refused.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert refused.error.message == (
        "unknown conversation kind 'email'; the kinds are chat, awareness"
    )
    listed = awareness.list_conversations.conversations
    assert [(c.key, c.kind) for c in listed] == [(AWARENESS, "awareness")]
