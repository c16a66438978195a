"""`tobe hand serve` starts only with a working command sandbox, unless the operator opts out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from helpers.eventually import eventually_async

from tobe.runtime.health import check

pytestmark = pytest.mark.e2e
NO_SANDBOX = ["/nonexistent/bwrap", "false"]


def hand_command(tmp_path: Path, bwrap: str, *extra: str) -> tuple[list[str], dict[str, str]]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(
        TOBE_CONFIG=str(tmp_path / "absent.toml"),
        TOBE_DATA_DIR=str(tmp_path / "data"),
        TOBE_HAND_TOKEN="unused",
        TOBE_HAND__BWRAP=bwrap,
    )
    argv = [
        sys.executable,
        "-m",
        "tobe",
        "hand",
        "serve",
        "--mind",
        "127.0.0.1:9",
        "--workspace",
        str(workspace),
        *extra,
    ]
    return argv, env


async def started_output(tmp_path: Path, bwrap: str, *extra: str) -> str:
    """Start the Hand, wait until its health endpoint answers, stop it; its stderr."""
    health = f"unix:{tmp_path / 'health.sock'}"
    argv, env = hand_command(tmp_path, bwrap, *extra, "--health-listen", health)
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )

    async def serving() -> bool:
        assert process.poll() is None, f"the Hand exited: {process.communicate()[1]}"
        try:
            await check(health, timeout=2.0)
        except grpc.aio.AioRpcError:
            return False
        return True

    try:
        await eventually_async(
            serving, 60, what="the Hand to serve its health endpoint", interval=0.1
        )
    finally:
        process.kill()
        _, stderr = process.communicate(timeout=10)
    return stderr


@pytest.mark.parametrize("bwrap", NO_SANDBOX)
def test_the_hand_refuses_to_start_when_commands_cannot_be_sandboxed(
    tmp_path: Path, bwrap: str
) -> None:
    argv, env = hand_command(tmp_path, bwrap)
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "Error: commands cannot be sandboxed on this machine" in result.stderr
    assert "apt-get install bubblewrap" in result.stderr
    assert "--allow-unconfined-commands" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("bwrap", NO_SANDBOX)
async def test_an_operator_opt_in_starts_the_hand_unconfined_and_it_says_so(
    tmp_path: Path, bwrap: str
) -> None:
    stderr = await started_output(tmp_path, bwrap, "--allow-unconfined-commands")
    assert "COMMANDS RUN UNCONFINED" in stderr


async def test_a_hand_that_runs_no_commands_starts_without_a_sandbox(tmp_path: Path) -> None:
    stderr = await started_output(tmp_path, NO_SANDBOX[0], "--read-only")
    assert "UNCONFINED" not in stderr and "sandbox" not in stderr


async def test_a_hand_with_a_working_sandbox_starts_and_says_commands_are_confined(
    tmp_path: Path,
) -> None:
    stderr = await started_output(tmp_path, "bwrap")
    assert "commands run in a sandbox that sees only" in stderr
    assert "without network" in stderr
