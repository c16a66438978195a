"""What `tobe up`, a service and `tobe chat` say when they cannot do their job: one line
naming what is wrong and the setting that fixes it, never "ToBe is up." after it."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import psutil
import pytest
from helpers.handler_server import serving
from helpers.ports import free_port
from helpers.up_process import clean_env, gone, printed, service_pids, spawn, up_env

pytestmark = pytest.mark.e2e


def finished(child: pexpect.spawn) -> str:
    """Wait for `child` to end; everything it printed."""
    child.expect(pexpect.EOF, timeout=90)
    child.close()
    return printed(child)


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Error:")]


@pytest.fixture
def squatter() -> Iterator[socket.socket]:
    """A plain listening socket on a free port, held by this test process."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held


def test_up_refuses_a_port_held_by_a_plain_socket_in_one_line(
    tmp_path: Path, squatter: socket.socket
) -> None:
    port = squatter.getsockname()[1]
    up = spawn(["up"], up_env(tmp_path / "data", face_port=port))
    output = finished(up)
    assert up.exitstatus != 0
    [line] = error_lines(output)
    assert line.startswith(
        f"Error: face cannot listen on 127.0.0.1:{port}: the address is in use, held by "
        f"{psutil.Process().name()} (pid {os.getpid()}: "
    )
    assert "[face] listen (TOBE_FACE__LISTEN, --face-listen) or use another --port-base" in output
    assert "ToBe is up." not in output and "Traceback" not in output
    assert service_pids(output) == []


def test_up_refuses_a_web_client_port_held_by_a_plain_socket_naming_the_setting(
    tmp_path: Path, squatter: socket.socket
) -> None:
    port = squatter.getsockname()[1]
    env = up_env(tmp_path / "data")
    env["TOBE_FACE__WEB__LISTEN"] = f"127.0.0.1:{port}"
    up = spawn(["up"], env)
    output = finished(up)
    assert up.exitstatus != 0
    [line] = error_lines(output)
    assert line.startswith(
        f"Error: web cannot listen on 127.0.0.1:{port}: the address is in use, held by "
        f"{psutil.Process().name()} (pid {os.getpid()}: "
    )
    assert (
        "change [face.web] listen (TOBE_FACE__WEB__LISTEN, --web-port) or use another "
        "--port-base, or start without the web client (--no-web)"
    ) in output
    assert "ToBe is up." not in output and "Traceback" not in output
    assert service_pids(output) == []


def test_a_service_that_cannot_bind_exits_with_one_line(
    tmp_path: Path, squatter: socket.socket
) -> None:
    address = f"127.0.0.1:{squatter.getsockname()[1]}"
    env = up_env(tmp_path / "data", listen=False)
    env["TOBE_FACE__MIND_TOKEN"] = "unused"
    result = subprocess.run(
        [sys.executable, "-m", "tobe", "face", "serve", "--listen", address],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(
        f"Error: face cannot listen on {address}: the address is in use, held by "
        f"{psutil.Process().name()} (pid {os.getpid()}: "
    )
    assert line.endswith(
        "change [face] listen (TOBE_FACE__LISTEN), or give `tobe up` another --port-base"
    )


class _Models(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server that rejects every key."""

    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": {"message": "invalid api key"}}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def rejecting_server() -> Iterator[str]:
    with serving(_Models) as url:
        yield url


def provider_up(tmp_path: Path, base_url: str) -> pexpect.spawn:
    env = up_env(tmp_path / "data", listen=False)
    env.update(TOBE_PROVIDER__BASE_URL=base_url, OPENAI_API_KEY="sk-test")
    return spawn(["up", "--port-base", "0", "--provider", "openai", "--model", "gpt-4o"], env)


def test_up_refuses_a_provider_nobody_answers_at_before_claiming_it_is_up(
    tmp_path: Path,
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    up = provider_up(tmp_path, dead)
    output = finished(up)
    assert up.exitstatus != 0
    assert "ToBe is up." not in output and "Traceback" not in output
    [line] = error_lines(output)
    assert f"cannot reach {dead}/models" in line
    assert "TOBE_PROVIDER__BASE_URL" in line
    assert all(gone(pid) for pid in service_pids(output))


def test_up_refuses_a_rejected_key_with_the_fix(tmp_path: Path, rejecting_server: str) -> None:
    up = provider_up(tmp_path, rejecting_server)
    output = finished(up)
    assert up.exitstatus != 0
    assert "ToBe is up." not in output
    [line] = error_lines(output)
    assert "the API key was rejected (HTTP 401" in line
    assert "OPENAI_API_KEY" in line


def test_a_crash_report_shows_only_this_starts_log_lines(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "logs").mkdir(parents=True)
    (data_dir / "logs" / "mind.log").write_text("a line from an older run\n")
    env = up_env(data_dir)
    env.update(TOBE_PROVIDER__KIND="scripted", TOBE_PROVIDER__SCRIPT=str(tmp_path / "absent.yaml"))
    up = spawn(["up"], env)
    output = finished(up)
    assert up.exitstatus != 0
    assert "mind exited with status 1" in output
    assert "absent.yaml" in output
    assert "a line from an older run" not in output
    assert "ToBe is up." not in output


def test_chat_with_no_face_to_reach_says_where_it_tried_and_how_to_point_it(
    tmp_path: Path,
) -> None:
    port = free_port()
    env = clean_env()
    env.update(TOBE_DATA_DIR=str(tmp_path / "data"), TOBE_FACE__LISTEN=f"127.0.0.1:{port}")
    chat = spawn(["chat", "--token", "unused"], env)
    output = finished(chat)
    assert chat.exitstatus == 1
    [line] = error_lines(output)
    assert f"no Face answers at 127.0.0.1:{port}" in line
    assert "--address" in line and "TOBE_DATA_DIR" in line
    assert "reconnecting" not in output
