"""Mode selection: the socket when a Mind answers, the lock otherwise, never a hang."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers.admin_cli import Admin

from tobe.runtime.statelock import is_locked

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent


@pytest.fixture
def lock_holder(admin: Admin) -> Iterator[subprocess.Popen[str]]:
    """A real process holding the state lock, as a Mind does while it starts."""
    process = subprocess.Popen(
        [sys.executable, str(HERE / "admin_lock_holder.py"), str(admin.data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **admin.env()},
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "locked"
        yield process
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        finally:
            process.kill()


def test_stale_socket_without_a_mind_goes_offline_and_is_removed(admin: Admin) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(admin.data_dir / "mind.sock"))
    stale.close()  # the file stays; nothing listens behind it
    result = admin.run("--verbose", "status")
    assert "mode: offline" in result.stderr
    assert not (admin.data_dir / "mind.sock").exists()


def test_cli_during_mind_start_ends_with_a_clear_message(
    admin: Admin, lock_holder: subprocess.Popen[str]
) -> None:
    result = admin.run("--wait", "0.5", "status", ok=False)
    assert result.exit_code == 1
    assert "tobe mind serve (starting)" in result.stderr
    assert "may be starting" in result.stderr


def test_cli_waits_for_a_starting_mind_and_then_goes_online(
    admin: Admin, lock_holder: subprocess.Popen[str]
) -> None:
    with ThreadPoolExecutor(1) as pool:
        command = pool.submit(admin.run, "--verbose", "--wait", "60", "status")
        assert lock_holder.stdin is not None and lock_holder.stdout is not None
        lock_holder.stdin.write("serve\n")
        lock_holder.stdin.flush()
        assert lock_holder.stdout.readline().strip() == "serving"
        result = command.result(timeout=60)
    assert "mode: online" in result.stderr
    socket_mode = stat.S_IMODE((admin.data_dir / "mind.sock").stat().st_mode)
    assert socket_mode == 0o600


def test_offline_command_holds_the_lock_only_while_it_runs(admin: Admin) -> None:
    admin.run("status")
    assert not is_locked(admin.data_dir)
