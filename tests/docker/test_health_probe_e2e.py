"""The image's health check reads the status a real service answers on its probe address,
starting no program: no Python, no `tobe`, nothing but the shell."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from compose_topology import image_healthcheck, image_programs, program_interpreter
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, issue_token, mind_env, run_mind_command, running_mind
from helpers.ports import free_port

pytestmark = pytest.mark.e2e
DEADLINE = 60.0
# Programs a health check that started an interpreter or the CLI would run.
TRAPPED = ("python", "python3", "python3.11", "tobe")


@pytest.fixture
def trap(tmp_path: Path) -> Path:
    """A directory of programs that record being started and fail, first on PATH."""
    directory = tmp_path / "trap"
    directory.mkdir()
    for name in TRAPPED:
        program = directory / name
        program.write_text(f'#!/bin/sh\necho "$0" >> "{directory}/started"\nexit 97\n')
        program.chmod(0o755)
    return directory


def run_check(service: str, probe: str, trap: Path) -> subprocess.CompletedProcess[str]:
    """The image's health check as a container runs it, with `trap` first on PATH."""
    [program] = image_healthcheck()
    script = image_programs()[program]
    return subprocess.run(
        [*program_interpreter(script), str(script)],
        env={
            "PATH": f"{trap}{os.pathsep}{os.environ['PATH']}",
            "TOBE_SERVICE": service,
            f"TOBE_{service.upper()}__PROBE_LISTEN": probe,
        },
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[tuple[MindProcess, str]]:
    probe = f"127.0.0.1:{free_port()}"
    with running_mind(tmp_path, script=None, clients=(), TOBE_MIND__PROBE_LISTEN=probe) as process:
        yield process, probe


def test_the_health_check_reads_a_real_minds_answer_without_starting_python(
    mind: tuple[MindProcess, str], trap: Path
) -> None:
    process, probe = mind
    result = run_check("mind", probe, trap)
    assert (result.returncode, result.stdout) == (0, "SERVING\n"), result.stderr
    assert not (trap / "started").exists()

    process.kill()
    result = run_check("mind", probe, trap)
    assert result.returncode == 1
    assert result.stdout == (
        f"the mind gave no health answer on {probe} (not started, stopped or stuck)\n"
    )
    assert not (trap / "started").exists()


def test_the_health_check_follows_a_real_hand_attaching_and_losing_its_mind(
    mind: tuple[MindProcess, str], trap: Path, tmp_path: Path
) -> None:
    process, _ = mind
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    probe = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(
        TOBE_CONFIG=str(tmp_path / "absent-config.toml"),
        TOBE_DATA_DIR=str(tmp_path / "hand-data"),
        TOBE_HAND_TOKEN=issue_token(process.url, kind="hand", principal="box", scopes=[]),
        # No gRPC health socket: the probe address alone.
        TOBE_HAND__PROBE_LISTEN=probe,
    )
    argv = ["hand", "serve", "--mind", process.address, "--name", "box"]
    hand = subprocess.Popen(
        [sys.executable, "-m", "tobe", *argv, "--workspace", str(workspace)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        attached = eventually(
            lambda: run_check("hand", probe, trap),
            DEADLINE,
            until=lambda result: result.returncode == 0,
            what="the Hand's probe to answer SERVING",
        )
        assert attached.stdout == "SERVING\n"

        process.kill()
        detached = eventually(
            lambda: run_check("hand", probe, trap),
            DEADLINE,
            until=lambda result: result.stdout.startswith("NOT_SERVING"),
            what="the Hand's probe to answer NOT_SERVING",
        )
        # The reason comes on the same line, for the container's health log.
        assert detached.stdout.startswith("NOT_SERVING (") and detached.stdout.endswith(")\n")
        assert detached.returncode == 1
        assert not (trap / "started").exists()
    finally:
        hand.kill()
        hand.wait(10)


def test_a_probe_address_in_use_stops_the_start_naming_its_setting(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = f"127.0.0.1:{squatter.getsockname()[1]}"
        result = run_mind_command(mind_env(data_dir, None, TOBE_MIND__PROBE_LISTEN=taken))
    assert result.returncode == 1
    [line] = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert line.startswith(f"Error: mind cannot listen on {taken}: the address is in use")
    assert line.endswith("; change [mind] probe_listen (TOBE_MIND__PROBE_LISTEN)")
    assert "Traceback" not in result.stderr
