"""`tobe chat` through a pseudo-terminal against real Face and Mind processes and a Hand: a
`delegate` call's child run shows as nested lines under the call, the child's approval is asked
in the parent's conversation ("asked by a sub-agent") and decided there with y, and the
conversation opened again shows the same nested lines (the screen is a VT100 emulator fed
everything the chat printed)."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator

import pexpect
import pytest
from helpers.approving_hand import laptop_hand
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, issue_token, running_mind
from helpers.screen import screen_lines

pytestmark = pytest.mark.e2e
PROMPT = "you› "
ROWS, COLUMNS = 40, 160
SCRIPT = """
runs:
  - match: "^delegate the note"
    steps:
      - tool_calls:
          - name: delegate
            arguments: {task: "child: save the note"}
      - {expect: {last_contains: "Saved by the child."}, text: "The sub-agent saved it."}
  - match: "^child: save the note"
    steps:
      - text: "Saving the note now."
        tool_calls:
          - name: laptop__save_note
            arguments: {name: "child.txt"}
      - {expect: {last_role: tool}, text: "Saved by the child."}
  - match: ".*"
    steps:
      - {text: "echo reply"}
"""
OPENED = r"\x1b\[1m([^\r\n\x1b]*) \((p_[\w-]+)\)"


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    root = tmp_path_factory.mktemp("chat-delegate")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(root, script=script, clients=()) as process:
        yield process


@pytest.fixture(scope="module")
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind) as process:
        yield process


@pytest.fixture(scope="module")
def laptop(mind: MindProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with laptop_hand(mind, tmp_path_factory.mktemp("laptop")):
        yield


def _chat(face: FaceProcess, token: str, *options: str) -> pexpect.spawn:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address, *options],
        env={**face.env, "TOBE_CHAT_TOKEN": token, "TERM": "xterm"},
        encoding="utf-8",
        timeout=30,
        dimensions=(ROWS, COLUMNS),
    )
    chat.logfile_read = io.StringIO()
    return chat


def _opened(chat: pexpect.spawn) -> str:
    chat.expect(OPENED)
    key = str(chat.match.group(2))
    chat.expect(PROMPT)
    return key


def _quit(chat: pexpect.spawn) -> list[str]:
    chat.sendline("/quit")
    chat.expect(pexpect.EOF)
    chat.close(force=True)
    return screen_lines(chat.logfile_read.getvalue(), COLUMNS, ROWS)


@pytest.mark.usefixtures("laptop")
def test_a_childs_calls_nest_under_the_delegate_call_and_its_approval_is_decided_here(
    mind: MindProcess, face: FaceProcess
) -> None:
    token = issue_token(mind.url, kind="client", principal="alice", scopes=["chat", "approve"])
    chat = _chat(face, token)
    try:
        _opened(chat)
        chat.sendline("/new delegating")
        key = _opened(chat)
        chat.sendline("delegate the note")
        chat.expect("asked by a sub-agent")
        chat.expect("approve\\? ")
        chat.sendline("y")
        chat.expect("The sub-agent saved it.")
        chat.expect(PROMPT)
    finally:
        live = _quit(chat)
    start = live.index(f"{PROMPT}delegate the note")
    turn = live[start : live.index("The sub-agent saved it.", start) + 1]
    assert any(line.startswith("  asked by a sub-agent (its conversation p_sub_") for line in turn)
    assert "approve? [y]es once / [a]lways here / [n]o [reason]: y" in turn
    # Under the call's result: the child's call, succeeded, and the child's last text.
    ended = next(i for i, line in enumerate(turn) if line.startswith("✓ delegate"))
    nested = turn[ended + 1 : ended + 3]
    assert nested[0].startswith("    ↳ ✓ laptop__save_note succeeded — name="), turn
    assert nested[0].endswith("→ succeeded, 15 chars"), turn
    assert not any(line.startswith("[new message in p_sub_") for line in turn), turn
    assert nested[1] == "    ↳ › Saved by the child.", turn

    again = _chat(face, token, "--conversation", key)
    try:
        _opened(again)
    finally:
        replayed = _quit(again)
    call = next(i for i, line in enumerate(replayed) if line.startswith("✓ delegate"))
    assert replayed[call + 1 : call + 3] == nested
