"""`tobe up` in a fresh data directory, and `tobe chat` through a pseudo-terminal."""

from __future__ import annotations

import io
import os
import re
import socket
import stat
import sys
from pathlib import Path

import pexpect
import pytest

from mind.management.local_credentials import provision
from tobe.config import Settings

pytestmark = pytest.mark.e2e
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


def chat_once(env: dict[str, str], text: str) -> None:
    """`tobe chat`: send one message, see the demo model answer, quit."""
    chat = spawn(["chat"], env)
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


def test_up_serves_a_streamed_chat_and_stops_without_leftovers(tmp_path: Path) -> None:
    env = up_env(tmp_path / "data")
    up = spawn(["up"], env)
    try:
        up.expect("DEMO SCRIPT")
        up.expect("ToBe is up.")
        up.expect("tobe chat")
        pids = service_pids(printed(up))
        assert len(pids) >= 2

        credentials = tmp_path / "data" / "credentials"
        assert stat.S_IMODE(credentials.stat().st_mode) == 0o700
        for name in ("face", "client", "hand"):
            assert stat.S_IMODE((credentials / f"{name}.token").stat().st_mode) == 0o600

        chat_once(env, "hello")

        up.kill(2)  # SIGINT, as Ctrl-C
        up.expect("Stopping ToBe")
        up.expect(pexpect.EOF, timeout=60)
        up.close()
        assert up.exitstatus == 0
        assert all(gone(pid) for pid in pids)
    finally:
        up.close(force=True)


def test_a_service_that_fails_is_reported_with_its_log(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        env = up_env(data_dir, face_port=squatter.getsockname()[1])
        up = spawn(["up"], env)
        try:
            up.expect("face exited with status")
            up.expect(f"last lines of {data_dir / 'logs' / 'face.log'}")
            up.expect(pexpect.EOF, timeout=60)
            up.close()
            assert up.exitstatus != 0
        finally:
            up.close(force=True)
    pids = service_pids(printed(up))
    assert "mind" in printed(up) and pids
    assert all(gone(pid) for pid in pids)

    # A later start reuses the credentials it created.
    tokens = {p.name: p.read_text() for p in (data_dir / "credentials").glob("*.token")}
    settings = Settings(data_dir=data_dir, database_url="")
    assert provision(settings) == []
    assert tokens == {p.name: p.read_text() for p in (data_dir / "credentials").glob("*.token")}


def test_up_makes_the_data_directory_owner_only_and_fixes_a_readable_one(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "logs").mkdir(parents=True)
    old_log = data_dir / "logs" / "mind.log"
    old_log.write_text("a line from an older version\n")
    for path, mode in ((data_dir, 0o755), (data_dir / "logs", 0o755), (old_log, 0o644)):
        os.chmod(path, mode)
    env = up_env(data_dir)
    up = spawn(["up"], env)
    try:
        for path in (data_dir, data_dir / "logs", old_log):
            up.expect_exact(f"Warning: {path} was readable by other users; made it owner-only")
        up.expect("ToBe is up.")
        chat_once(env, "my PIN is 1234")

        # While everything runs: the store with its -wal/-shm, logs, sockets, credentials, the
        # Awareness journal and media, the workspace.
        modes = {data_dir: stat.S_IMODE(data_dir.stat().st_mode)}
        modes.update({p: stat.S_IMODE(p.lstat().st_mode) for p in data_dir.rglob("*")})
        names = {p.name for p in modes}
        assert {"tobe.db", "tobe.db-wal", "tobe.db-shm", "mind.sock", "face.log"} <= names
        assert {"awareness", "journal.db", "media", "workspace", "credentials"} <= names, names
        loose = {
            str(p.relative_to(tmp_path)): oct(mode)
            for p, mode in modes.items()
            if mode != (0o700 if p.is_dir() else 0o600)
        }
        assert loose == {}

        up.kill(2)
        up.expect(pexpect.EOF, timeout=60)
    finally:
        up.close(force=True)
