"""A service `tobe up` spawns ahead of its wave waits, loaded, until it is released."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tobe.runtime.supervisor import held_env, release


def _held(tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, **held_env(("tobe.health_cli",)), "TOBE_DATA_DIR": str(tmp_path)}
    env.pop("TOBE_MIND__LISTEN", None)
    return subprocess.Popen(
        [sys.executable, "-m", "tobe", "health", "--all"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def test_a_held_service_starts_only_when_released_and_with_the_environment_given(
    tmp_path: Path,
) -> None:
    child = _held(tmp_path)
    try:
        time.sleep(1.0)  # watching that it does not start by itself
        assert child.poll() is None
        assert child.stdin is not None
        release(child.stdin, {"TOBE_MIND__LISTEN": "127.0.0.1:1"})
        output = _output(child)
    finally:
        child.kill()
    assert b"mind  127.0.0.1:1 " in output


def test_a_held_service_exits_quietly_when_its_supervisor_stops_first(tmp_path: Path) -> None:
    child = _held(tmp_path)
    assert child.stdin is not None
    child.stdin.close()
    output = _output(child)
    assert (child.returncode, output) == (0, b"")


def _output(child: subprocess.Popen[bytes]) -> bytes:
    assert child.stdout is not None
    output = child.stdout.read()
    child.wait(timeout=60)
    return output
