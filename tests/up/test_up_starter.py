"""The service starter forks `tobe` commands as `tobe up` asks, and reports how they end.

Real processes: a starter (`python -m tobe.runtime.service_starter`) and the commands it forks.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from helpers.admin_cli import Admin
from helpers.eventually import eventually
from helpers.up_process import chat_once, gone, printed, spawn, up_env

from management.up_starter import ForkedService, ServiceStarter
from tobe import __version__
from tobe.runtime.addresses import published
from tobe.runtime.supervisor import held_env, release

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


@pytest.fixture
def starter(tmp_path: Path) -> Iterator[ServiceStarter]:
    started = ServiceStarter()
    started.start()
    started.log_to(tmp_path / "starter.log", "--- starter")
    yield started
    started.stop()


def fork(starter: ServiceStarter, log: Path, argv: list[str], held: bool) -> ForkedService:
    env = {**os.environ, **(held_env(()) if held else {})}
    with log.open("ab") as handle:
        return starter.spawn(argv, env, handle.fileno(), held)


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_forked_command_logs_to_its_file_and_ends_with_its_exit_code(
    starter: ServiceStarter, tmp_path: Path
) -> None:
    ok = fork(starter, tmp_path / "ok.log", ["--version"], held=False)
    unknown = fork(starter, tmp_path / "unknown.log", ["no-such-command"], held=False)
    assert (ok.wait(30), unknown.wait(30)) == (0, 2)
    assert f"tobe, version {__version__}" in (tmp_path / "ok.log").read_text()
    assert "No such command 'no-such-command'" in (tmp_path / "unknown.log").read_text()


def test_a_held_command_is_titled_as_it_would_run_and_starts_once_released(
    starter: ServiceStarter, tmp_path: Path
) -> None:
    held = fork(starter, tmp_path / "held.log", ["--version"], held=True)
    # It waits on its release pipe: nothing can end it before the release.
    assert held.poll() is None
    assert parent(held.pid) == starter.pid
    eventually(
        lambda: Path(f"/proc/{held.pid}/cmdline").read_bytes().replace(b"\0", b" ").split(),
        until=lambda words: words == [sys.executable.encode(), b"-m", b"tobe", b"--version"],
        what="the forked command titled as `python -m tobe --version`",
    )
    assert held.stdin is not None
    release(held.stdin, {})
    assert held.wait(30) == 0
    assert f"version {__version__}" in (tmp_path / "held.log").read_text()


def test_a_forked_command_takes_the_umask_of_tobe_up_at_the_fork(tmp_path: Path) -> None:
    # The starter may start before `tobe up` sets its umask (`start_early`).
    before = os.umask(0o022)
    started = ServiceStarter()
    try:
        started.start()
        started.log_to(tmp_path / "starter.log", "--- starter")
        os.umask(0o077)
        held = fork(started, tmp_path / "held.log", ["--version"], held=True)
        umask = eventually(
            lambda: Path(f"/proc/{held.pid}/status").read_text(),
            until=lambda status: "\nUmask:\t0077\n" in status,
            what="the forked command's umask 0077",
        )
        assert "Umask:\t0077" in umask
        assert held.stdin is not None
        release(held.stdin, {})
        assert held.wait(30) == 0
    finally:
        os.umask(before)
        started.stop()


def test_a_command_killed_by_a_signal_reports_the_signal(
    starter: ServiceStarter, tmp_path: Path
) -> None:
    held = fork(starter, tmp_path / "held.log", ["--version"], held=True)
    os.kill(held.pid, signal.SIGKILL)
    assert held.wait(30) == -signal.SIGKILL


def test_a_killed_starter_takes_its_commands_along_and_the_next_fork_starts_a_new_one(
    starter: ServiceStarter, tmp_path: Path
) -> None:
    held = fork(starter, tmp_path / "held.log", ["--version"], held=True)
    first = starter.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    # It followed the starter as it would follow `tobe up` (SIGTERM on its parent's death).
    assert held.wait(30) == -signal.SIGTERM
    assert starter.news() == (
        "the service starter exited (killed by SIGKILL); the services it started end with "
        "it and are started again"
    )
    assert starter.news() is None
    again = fork(starter, tmp_path / "again.log", ["--version"], held=False)
    assert again.wait(30) == 0
    assert starter.pid not in (None, first)


def test_tobe_up_restarts_the_services_of_a_killed_starter_and_serves_again(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    env = up_env(data_dir, listen=False)
    up = spawn(["up", "--port-base", "0", "--no-web"], env)
    started: dict[str, int] = {}
    try:
        up.expect("Press Ctrl-C")
        started = {n: int(p) for n, p in re.findall(r"(\w+) +pid (\d+) +log", printed(up))}
        starter = parent(started["mind"])
        assert {parent(pid) for pid in started.values()} == {starter}

        os.kill(starter, signal.SIGKILL)
        up.expect(r"the service starter exited \(killed by SIGKILL\)")
        for _ in started:
            up.expect(r"(\w+) exited \(killed by SIGTERM\); restarting it in 1 s")
        serving = ("mind", "face", "awareness")
        restarted = eventually(
            lambda: published(data_dir),
            until=lambda now: all(
                name in now and now[name].pid != started[name] for name in serving
            ),
            what="the services published again by new processes",
        )
        chat_once(env, "are you back?")
        eventually(
            lambda: [hand["name"] for hand in Admin(data_dir).json("status")["hands"]],
            until=lambda names: names == ["local"],
            what="the restarted local Hand attached",
        )
        new_starter = parent(restarted["mind"].pid)
        assert {parent(restarted[name].pid) for name in serving} == {new_starter}
        assert new_starter != starter
        up.kill(signal.SIGINT)
        up.expect("Stopping ToBe")
        up.expect(pexpect.EOF, timeout=60)
        up.close()
        assert up.exitstatus == 0, printed(up)
    finally:
        up.close(force=True)
        for pid in started.values():
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
