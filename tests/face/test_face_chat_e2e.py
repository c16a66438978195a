"""`tobe chat` through a pseudo-terminal against real Face and Mind processes."""

from __future__ import annotations

import io
import sys

import pexpect
import pytest
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess

pytestmark = pytest.mark.e2e
PROMPT = "you› "


def test_chat_streams_shows_tools_and_survives_a_face_restart(
    mind: MindProcess, face: FaceProcess
) -> None:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address],
        env={**face.env, "TOBE_CHAT_TOKEN": mind.client_tokens["alice"], "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 160),
    )
    chat.logfile_read = io.StringIO()
    try:
        chat.expect(PROMPT)
        chat.sendline("hello")
        chat.expect("echo reply")
        chat.expect(PROMPT)

        chat.sendline("time now")
        chat.expect("current_time")
        chat.expect('"UTC"')  # transparent by default: raw arguments
        chat.expect("Done: here is the time.")
        chat.expect(PROMPT)

        face.restart()
        chat.expect("reconnected")
        chat.sendline("/list")
        chat.expect("p_")
        chat.sendline("multi\\")
        chat.sendline("line")
        chat.expect("echo reply")
        chat.expect(PROMPT)
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)
    # The first session's user messages are not echoed twice.
    assert chat.logfile_read.getvalue().count("hello") == 1
