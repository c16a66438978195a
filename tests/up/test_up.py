"""`tobe up` in a fresh data directory, and `tobe chat` through a pseudo-terminal."""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pexpect
import pytest
from helpers.store_backend import database_url
from helpers.up_process import chat_once, gone, printed, service_pids, spawn, up_env

from mind.management.local_credentials import provision
from tobe.config import Settings
from tobe.runtime.addresses import published

pytestmark = pytest.mark.e2e


def test_up_serves_a_streamed_chat_and_stops_without_leftovers(tmp_path: Path) -> None:
    # Every service on a port it picks: chat finds Face where it published its address.
    env = up_env(tmp_path / "data", listen=False)
    up = spawn(["up", "--port-base", "0"], env)
    try:
        up.expect("DEMO SCRIPT")
        up.expect("ToBe is up.")
        up.expect("tobe chat")
        pids = service_pids(printed(up))
        assert len(pids) >= 2

        credentials = tmp_path / "data" / "credentials"
        created = "Created local credentials: awareness, client, face, hand"
        assert f"{created} (in {credentials}, owner-only)" in printed(up)
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
        assert published(tmp_path / "data") == {}
    finally:
        up.close(force=True)


def test_the_services_end_when_tobe_up_is_killed(tmp_path: Path) -> None:
    up = spawn(["up", "--port-base", "0", "--no-web"], up_env(tmp_path / "data", listen=False))
    pids: list[int] = []
    try:
        up.expect("ToBe is up.")
        pids = service_pids(printed(up))
        assert len(pids) >= 2
        up.kill(signal.SIGKILL)  # no chance to stop them itself
        deadline = time.monotonic() + 30
        while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in pids if not gone(pid)] == []
    finally:
        up.close(force=True)
        for pid in pids:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_service_that_fails_is_reported_with_its_log(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = up_env(data_dir)
    # Face exits at start: the CA it is told to trust for the Mind does not exist.
    env["TOBE_FACE__MIND_TLS__CA_FILE"] = str(tmp_path / "absent-ca.pem")
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
    settings = Settings(data_dir=data_dir, database_url=database_url(data_dir))
    assert provision(settings) == []
    assert tokens == {p.name: p.read_text() for p in (data_dir / "credentials").glob("*.token")}


@pytest.mark.sqlite_store(reason="checks the modes of the SQLite store file and its -wal/-shm")
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
