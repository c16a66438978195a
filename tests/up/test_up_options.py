"""`tobe up` options, the addresses the services publish, and what a second start is told.

One `tobe up --data-dir D --port-base N` runs for the module (the web client included, on
N+21); the tests look at it from outside, as a user's other terminal would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pexpect
import pytest
from helpers.up_process import (
    banner_command,
    clean_env,
    converse,
    free_port_base,
    gone,
    printed,
    service_pids,
    spawn,
    spawn_shell,
    up_env,
)

pytestmark = pytest.mark.e2e


@dataclass
class RunningUp:
    process: pexpect.spawn
    data_dir: Path
    port_base: int


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningUp]:
    data_dir = tmp_path_factory.mktemp("up") / "data"
    base = free_port_base()
    # No TOBE_DATA_DIR and no listen variables: the options alone say where.
    env = clean_env()
    env["TOBE_CONFIG"] = str(data_dir.parent / "absent-config.toml")
    up = spawn(["up", "--data-dir", str(data_dir), "--port-base", str(base)], env)
    try:
        up.expect("ToBe is up.")
        up.expect("Press Ctrl-C")
        yield RunningUp(up, data_dir, base)
        pids = service_pids(printed(up))
        up.kill(2)
        up.expect(pexpect.EOF, timeout=60)
        assert all(gone(pid) for pid in pids)
    finally:
        up.close(force=True)


def test_up_help_documents_every_option() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tobe", "up", "--help"],
        capture_output=True,
        text=True,
        env=clean_env(),
        check=True,
    )
    for option in (
        "--data-dir",
        "--port-base",
        "--mind-listen",
        "--face-listen",
        "--awareness-listen",
        "--web-port",
        "--no-web",
        "--provider",
        "--model",
        "--verbose",
    ):
        assert option in result.stdout


def test_services_publish_the_ports_of_the_port_base(running: RunningUp) -> None:
    runtime = json.loads((running.data_dir / "runtime.json").read_text())["services"]
    base = running.port_base
    assert runtime["mind"]["address"] == f"127.0.0.1:{base + 10}"
    assert runtime["face"]["address"] == f"127.0.0.1:{base + 20}"
    assert runtime["web"]["address"] == f"127.0.0.1:{base + 21}"
    assert runtime["awareness"]["address"] == f"127.0.0.1:{base + 30}"
    assert set(service_pids(printed(running.process))) >= {
        entry["pid"] for entry in runtime.values()
    }


def test_the_chat_command_the_banner_prints_reaches_the_running_face(running: RunningUp) -> None:
    command = banner_command(printed(running.process), "Chat (in another terminal):")
    assert command.startswith(f"TOBE_DATA_DIR={running.data_dir} ")
    converse(spawn_shell(command, clean_env()), "hello")


def test_the_banner_prints_the_web_client_and_a_sign_in_command_that_works_as_printed(
    running: RunningUp,
) -> None:
    output = printed(running.process)
    url = banner_command(output, "Web client (in a browser):")
    assert url == f"http://127.0.0.1:{running.port_base + 21}/"
    health = httpx.get(url + "healthz", timeout=10)
    assert (health.status_code, health.text) == (200, "ok")
    sign_in = banner_command(output, "Sign in there (a one-time link):")
    assert sign_in == f"TOBE_DATA_DIR={running.data_dir} tobe admin pair"
    paired = subprocess.run(
        ["sh", "-c", sign_in], env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert paired.returncode == 0, paired.stderr
    assert f"{url}#pair=" in paired.stdout


def test_health_and_status_include_the_web_client_the_face_of_up_serves(
    running: RunningUp,
) -> None:
    env = {**clean_env(), "TOBE_DATA_DIR": str(running.data_dir)}
    health = subprocess.run(
        [sys.executable, "-m", "tobe", "health", "--all"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert health.returncode == 0, health.stdout + health.stderr
    states = {line.split()[0]: line.split()[1:] for line in health.stdout.splitlines()}
    assert states["web"] == [f"127.0.0.1:{running.port_base + 21}", "SERVING"]
    status = subprocess.run(
        [sys.executable, "-m", "tobe", "admin", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["web"] == {
        "address": f"127.0.0.1:{running.port_base + 21}",
        "url": f"http://127.0.0.1:{running.port_base + 21}/",
        "status": "SERVING",
        "detail": "",
    }


def test_a_second_up_on_the_same_data_directory_is_told_in_one_line(running: RunningUp) -> None:
    second = spawn(["up", "--data-dir", str(running.data_dir), "--port-base", "0"], clean_env())
    second.expect(pexpect.EOF)
    second.close()
    output = printed(second)
    assert second.exitstatus != 0
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, output
    assert f"ToBe is already running on {running.data_dir}" in errors[0]
    assert "ToBe is up." not in output and "Traceback" not in output


def test_a_port_held_by_another_tobe_names_it_and_the_setting(
    running: RunningUp, tmp_path: Path
) -> None:
    env = up_env(tmp_path / "other", listen=False)
    second = spawn(["up", "--port-base", str(running.port_base)], env)
    second.expect(pexpect.EOF)
    second.close()
    output = printed(second)
    assert second.exitstatus != 0
    mind_line = next(line for line in output.splitlines() if "mind cannot listen" in line)
    assert f"127.0.0.1:{running.port_base + 10}: the address is in use" in mind_line
    assert "tobe mind serve" in mind_line and "TOBE_MIND__LISTEN" in mind_line
    assert "ToBe is up." not in output and "Traceback" not in output
    assert service_pids(output) == []
