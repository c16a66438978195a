"""`tobe up` and `tobe chat` as real processes: the environment of a fresh data directory,
commands on a pseudo-terminal, and what they printed."""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path

import pexpect

from helpers import store_backend
from helpers.ports import free_port, is_free

START_TIMEOUT = 120
PROVIDER_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def free_port_base() -> int:
    """A `--port-base` N whose N+10, N+20, N+21 and N+30 are free right now."""
    while True:
        base = free_port() - 30
        if base > 1024 and all(is_free(base + offset) for offset in (10, 20, 21, 30)):
            return base


def clean_env() -> dict[str, str]:
    """This environment without any ToBe setting or provider key, on an xterm, with the
    `tobe` command on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOBE_") and k not in PROVIDER_VARIABLES
    }
    env.update(TERM="xterm", PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}")
    return env


def up_env(data_dir: Path, face_port: int | None = None, *, listen: bool = True) -> dict[str, str]:
    """The environment of a `tobe up` on `data_dir` without a config file; with `listen`, each
    service on a free port of its own."""
    env = clean_env()
    env.update(TOBE_DATA_DIR=str(data_dir), TOBE_CONFIG=str(data_dir / "absent-config.toml"))
    env.update(store_backend.environment(data_dir))
    if listen:
        env.update(
            TOBE_MIND__LISTEN=f"127.0.0.1:{free_port()}",
            TOBE_FACE__LISTEN=f"127.0.0.1:{face_port or free_port()}",
            TOBE_FACE__WEB__LISTEN=f"127.0.0.1:{free_port()}",
            TOBE_AWARENESS__LISTEN=f"127.0.0.1:{free_port()}",
        )
    return env


def spawn(args: list[str], env: dict[str, str]) -> pexpect.spawn:
    """The command on a pseudo-terminal; everything it prints accumulates in `.logfile_read`."""
    return _on_terminal(sys.executable, ["-m", "tobe", *args], env)


def spawn_shell(command: str, env: dict[str, str]) -> pexpect.spawn:
    """A command line as a user types it (`VAR=value tobe chat …`), run by `sh -c`."""
    return _on_terminal("/bin/sh", ["-c", command], env)


def _on_terminal(program: str, args: list[str], env: dict[str, str]) -> pexpect.spawn:
    child = pexpect.spawn(
        program, args, env=env, encoding="utf-8", timeout=START_TIMEOUT, dimensions=(50, 160)
    )
    child.logfile_read = io.StringIO()
    return child


def chat_once(env: dict[str, str], text: str, *options: str) -> None:
    """`tobe chat` with `options`: send one message, see the demo model answer, quit."""
    converse(spawn(["chat", *options], env), text)


def converse(chat: pexpect.spawn, text: str) -> None:
    """On a started `tobe chat`: send one message, see the demo model answer, quit."""
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
    return [int(pid) for pid in re.findall(r"\w+ +pid (\d+) +log", output)]


def banner_command(output: str, label: str) -> str:
    """The command the banner printed after `label` (e.g. "Chat (in another terminal):")."""
    match = re.search(re.escape(label) + r" +(.+?)\r?\n", output)
    assert match is not None, output
    return match.group(1).strip()


def gone(pid: int) -> bool:
    """The process ended: no such process, or one only its parent has yet to reap."""
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"
