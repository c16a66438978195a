"""`tobe chat` on a pseudo-terminal when its connection breaks, against real Mind and Face
processes: a credential revoked while it is open ends it with one line and status 1 (it used to
wait at the prompt forever), and a Face that went away is reconnected to with a visible
"reconnecting…" line, showing once what was said in the conversation meanwhile; a Face whose
own link to the Mind drops says so, says when it is back, and a message typed meanwhile then
goes out once."""

from __future__ import annotations

import asyncio
import io
import re
import sys
from collections.abc import Iterator

import pexpect
import pytest
from helpers.admin_cli import Admin
from helpers.eventually import eventually
from helpers.face_process import FaceProcess, MindDirect
from helpers.mind_process import MindProcess
from helpers.screen import screen_lines

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e
PROMPT = "you› "
COLUMNS, ROWS = 160, 50


def spawn_chat(face: FaceProcess, token: str, *extra: str) -> pexpect.spawn:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address, *extra],
        env={**face.env, "TOBE_CHAT_TOKEN": token, "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(ROWS, COLUMNS),
    )
    chat.logfile_read = io.StringIO()
    return chat


@pytest.fixture
def chats() -> Iterator[list[pexpect.spawn]]:
    """The chat processes a test started; each is ended, whatever the test did."""
    started: list[pexpect.spawn] = []
    yield started
    for chat in started:
        chat.close(force=True)


def shown(chat: pexpect.spawn) -> list[str]:
    assert isinstance(chat.logfile_read, io.StringIO)
    return screen_lines(chat.logfile_read.getvalue(), COLUMNS, ROWS)


def on_screen(chat: pexpect.spawn, text: str, times: int) -> None:
    """Wait until the chat's screen shows `text` `times` times."""
    eventually(
        lambda: (chat.expect([pexpect.TIMEOUT, pexpect.EOF], timeout=0.2), shown(chat))[1],
        until=lambda lines: "\n".join(lines).count(text) >= times,
        what=f"{text!r} {times} times on the chat's screen",
    )


def test_revoking_the_credential_of_an_open_chat_ends_it_with_one_line_and_status_1(
    mind: MindProcess, face: FaceProcess, chats: list[pexpect.spawn]
) -> None:
    admin = Admin(mind.data_dir)
    created = admin.json(
        "credentials", "create", "--kind", "client", "--principal", "alice", "--scope", "chat"
    )
    chat = spawn_chat(face, str(created["secret"]))
    chats.append(chat)
    chat.expect(PROMPT)
    chat.sendline("hello")
    chat.expect("echo reply")
    chat.expect(PROMPT)

    # Waiting at the prompt, as the person was: nothing is typed after the revocation.
    admin.run("credentials", "revoke", created["credential"]["id"])
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 1
    lines = shown(chat)
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1, lines
    assert "refused this chat's credential (credential revoked)" in errors[0]
    assert "tobe admin whoami" in errors[0] and "--token" in errors[0]
    assert not any("Traceback" in line or "reconnecting" in line for line in lines), lines


def test_a_chat_whose_credential_is_refused_on_reconnecting_ends_with_one_line(
    mind: MindProcess, face: FaceProcess, chats: list[pexpect.spawn]
) -> None:
    """Revoked while the Face was down: the first reconnect is refused, and that is final."""
    admin = Admin(mind.data_dir)
    created = admin.json(
        "credentials", "create", "--kind", "client", "--principal", "alice", "--scope", "chat"
    )
    chat = spawn_chat(face, str(created["secret"]))
    chats.append(chat)
    chat.expect(PROMPT)
    face.kill()
    chat.expect("reconnecting…")
    admin.run("credentials", "revoke", created["credential"]["id"])
    face.start(face.address)
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 1
    errors = [line for line in shown(chat) if line.startswith("Error: ")]
    assert len(errors) == 1 and "refused this chat's credential" in errors[0], shown(chat)


def test_a_chat_reconnects_to_a_restarted_face_and_shows_what_was_said_meanwhile_once(
    mind: MindProcess, face: FaceProcess, chats: list[pexpect.spawn]
) -> None:
    asyncio.run(create(mind, "p_gap", "Across the gap"))
    chat = spawn_chat(face, mind.client_tokens["alice"], "--conversation", "p_gap")
    chats.append(chat)
    chat.expect("Across the gap")
    chat.expect(PROMPT)
    chat.sendline("before the gap")
    chat.expect("echo reply")
    chat.expect(PROMPT)

    face.kill()
    chat.expect("connection to the Face lost")
    chat.expect("reconnecting…")
    # Said in the conversation by another client while this one is cut off...
    asyncio.run(say_and_wait(mind, "p_gap", "said while away"))
    # ...and typed here while the Face is still down: sent once it is back.
    chat.sendline("typed while away")
    chat.expect("reconnecting…")
    face.start(face.address)
    chat.expect("reconnected")
    chat.expect("said while away")
    chat.expect("echo reply")
    chat.expect(PROMPT)
    chat.sendline("after the gap")
    chat.expect("echo reply")
    chat.expect(PROMPT)
    chat.sendline("/quit")
    chat.expect(pexpect.EOF)

    lines = shown(chat)
    text = "\n".join(lines)
    # The line took the waiting prompt's place, and the prompt came again below it.
    assert any(line.startswith("connection to the Face lost (") for line in lines), lines
    assert f"{PROMPT}typed while away" in lines, lines
    # Every message of the conversation exactly once: nothing lost, nothing repeated.
    assert text.count("said while away") == 1, lines
    for mine in ("before the gap", "typed while away", "after the gap"):
        assert text.count(mine) == 1, (mine, lines)
    assert text.count("echo reply") == 4, lines
    history = asyncio.run(user_texts(mind, "p_gap"))
    assert history == ["before the gap", "said while away", "typed while away", "after the gap"]


def test_a_chat_says_when_the_faces_link_to_the_mind_drops_and_sends_what_was_typed_once_back(
    mind: MindProcess, face: FaceProcess, chats: list[pexpect.spawn]
) -> None:
    chat = spawn_chat(face, mind.client_tokens["alice"])
    chats.append(chat)
    chat.expect(PROMPT)
    chat.sendline("before the restart")
    chat.expect("echo reply")
    chat.expect(PROMPT)

    mind.kill()
    chat.expect(r"the Face lost its link to the Mind \(UNAVAILABLE\); reconnecting…")
    chat.sendline("typed while the Mind is away")
    chat.expect("the Mind is unavailable; sending your message again in")
    mind.start(mind.address)
    chat.expect("the Face is linked to the Mind again")
    # The message typed meanwhile is answered before or after the line above. The next line
    # is typed once that answer is on the screen, and /quit once the next answer is: a line
    # typed ahead is echoed by the terminal into whatever is being drawn at that moment.
    on_screen(chat, "echo reply", 2)
    chat.sendline("after the restart")
    on_screen(chat, "echo reply", 3)
    chat.sendline("/quit")
    chat.expect(pexpect.EOF)

    text = "\n".join(shown(chat))
    assert text.count("echo reply") == 3, text
    assert text.count("typed while the Mind is away") == 1, text
    assert text.count("after the restart") == 1, text
    # The chat's own connection to the Face never broke.
    assert "connection to the Face lost" not in text, text
    history = asyncio.run(user_texts(mind, key_of(text)))
    assert history == ["before the restart", "typed while the Mind is away", "after the restart"]


def key_of(screen: str) -> str:
    """The key of the conversation chat opened, from the rule above it."""
    found = re.search(r"\b(p_[0-9a-f]+)\b", screen)
    assert found, screen
    return found.group(1)


async def create(mind: MindProcess, key: str, title: str) -> None:
    direct = MindDirect(mind)
    try:
        await direct.create(key, title=title)
    finally:
        await direct.close()


async def say_and_wait(mind: MindProcess, key: str, text: str) -> None:
    direct = MindDirect(mind)
    try:
        await direct.send(key, text)
        await direct.wait_run_end(key)
    finally:
        await direct.close()


async def user_texts(mind: MindProcess, key: str) -> list[str]:
    direct = MindDirect(mind)
    try:
        events = await direct.durable_events("alice")
    finally:
        await direct.close()
    return [
        event.message_appended.text
        for event in events
        if event.conversation_key == key
        and event.HasField("message_appended")
        and event.message_appended.role == common_pb2.MESSAGE_ROLE_USER
    ]
