"""`tobe up` and `tobe chat` as real processes: the environment of a fresh data directory,
commands on a pseudo-terminal, and what they printed."""

from __future__ import annotations

import io
import os
import re
import socket
import sys
from pathlib import Path

import pexpect

START_TIMEOUT = 120
PROVIDER_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def up_env(data_dir: Path, face_port: int | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOBE_") and k not in PROVIDER_VARIABLES
    }
    env.update(
        TOBE_DATA_DIR=str(data_dir),
        TOBE_CONFIG=str(data_dir / "absent-config.toml"),
        TOBE_MIND__LISTEN=f"127.0.0.1:{free_port()}",
        TOBE_FACE__LISTEN=f"127.0.0.1:{face_port or free_port()}",
        TOBE_AWARENESS__LISTEN=f"127.0.0.1:{free_port()}",
        TERM="xterm",
    )
    return env


def spawn(args: list[str], env: dict[str, str]) -> pexpect.spawn:
    """The command on a pseudo-terminal; everything it prints accumulates in `.logfile_read`."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", *args],
        env=env,
        encoding="utf-8",
        timeout=START_TIMEOUT,
        dimensions=(50, 160),
    )
    child.logfile_read = io.StringIO()
    return child


def chat_once(env: dict[str, str], text: str, *options: str) -> None:
    """`tobe chat` with `options`: send one message, see the demo model answer, quit."""
    chat = spawn(["chat", *options], env)
    try:
        chat.expect("you› ")
        chat.sendline(text)
        chat.expect("offline demo model")
        chat.expect("you› ")
        chat.sendline("/quit")
        chat.expect(pexpect.EOF, timeout=30)
    finally:
        chat.close(force=True)


def printed(child: pexpect.spawn) -> str:
    return child.logfile_read.getvalue()


def service_pids(output: str) -> list[int]:
    return [int(pid) for pid in re.findall(r"pid (\d+)", output)]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
