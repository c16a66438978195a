"""TLS that stays on: a data directory whose Mind served TLS is not served in plaintext by
accident. Real `tobe mind serve` and `tobe up` processes on the same data directory."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pexpect
import pytest
from helpers.mind_process import MindProcess, mind_env, run_mind_command, running_mind
from helpers.up_process import printed, service_pids, spawn, up_env

from management.certificates import certificate_file, create_ca, issue, key_file, write_files
from tobe.runtime.health import check
from tobe.runtime.tls_record import RECORD

pytestmark = pytest.mark.e2e


@pytest.fixture
def tls_env(tmp_path: Path) -> dict[str, str]:
    """The settings of a Mind serving TLS with a certificate of a fresh CA."""
    ca = create_ca()
    server = issue(ca, "localhost", hosts=["localhost", "127.0.0.1"])
    directory = tmp_path / "tls"
    write_files(
        directory,
        {
            "ca.pem": certificate_file(ca.certificate_pem()),
            "server.pem": certificate_file(server.certificate_pem()),
            "server.key": key_file(server.key_pem()),
        },
        force=False,
    )
    return {
        "TOBE_MIND__TLS__CERT_FILE": str(directory / "server.pem"),
        "TOBE_MIND__TLS__KEY_FILE": str(directory / "server.key"),
    }


def served_tls_before(tmp_path: Path, tls_env: dict[str, str]) -> Path:
    """Run a Mind with TLS on `tmp_path/data` once; returns the data directory."""
    with running_mind(tmp_path, script=None, clients=(), **tls_env) as mind:
        assert mind.terminate() == 0
    return mind.data_dir


def test_a_mind_that_served_tls_refuses_to_start_in_plaintext_saying_why_in_one_line(
    tmp_path: Path, tls_env: dict[str, str]
) -> None:
    data_dir = served_tls_before(tmp_path, tls_env)
    assert (data_dir / RECORD).is_file()

    result = run_mind_command(mind_env(data_dir, None))

    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    [line] = [line for line in output.splitlines() if "cannot start the Mind" in line]
    assert "served TLS on this data directory before" in line
    assert "TOBE_MIND__TLS__CERT_FILE" in line and "TOBE_MIND__ALLOW_PLAINTEXT=true" in line
    assert "Traceback" not in output and "mind listening on" not in output
    assert (data_dir / RECORD).is_file()  # refused: nothing changed

    # TLS back on: it starts again.
    with running_mind(tmp_path, script=None, clients=(), **tls_env) as mind:
        assert mind.address


def test_allow_plaintext_starts_it_in_plaintext_once_with_a_warning_and_clears_the_record(
    tmp_path: Path, tls_env: dict[str, str]
) -> None:
    data_dir = served_tls_before(tmp_path, tls_env)
    env = mind_env(data_dir, None, TOBE_MIND__ALLOW_PLAINTEXT="true")
    mind = MindProcess(data_dir, env, gateway_token="", client_tokens={})
    try:
        mind.start()
        assert asyncio.run(check(mind.address, "tobe.v1.Mind", 10)) == "SERVING"  # plaintext
        [warning] = [line for line in mind.output if "serving plaintext on" in line]
        assert "WARNING" in warning and "mind.allow_plaintext" in warning
        assert mind.terminate() == 0
    finally:
        mind.kill()
    assert not (data_dir / RECORD).exists()
    # Plaintext was chosen: the next plaintext start needs the setting no more.
    again = MindProcess(data_dir, mind_env(data_dir, None), gateway_token="", client_tokens={})
    try:
        again.start()
        assert not [line for line in again.output if "serving plaintext on" in line]
    finally:
        again.kill()


def test_a_plaintext_mind_on_a_fresh_data_directory_starts_and_leaves_no_record(
    tmp_path: Path,
) -> None:
    with running_mind(tmp_path, script=None, clients=()) as mind:
        assert mind.address
    assert not (mind.data_dir / RECORD).exists()


def test_tobe_up_without_tls_on_a_data_directory_that_served_tls_refuses_before_starting(
    tmp_path: Path, tls_env: dict[str, str]
) -> None:
    data_dir = served_tls_before(tmp_path, tls_env)
    up = spawn(["up"], up_env(data_dir))
    up.expect(pexpect.EOF, timeout=90)
    up.close()
    output = printed(up)
    assert up.exitstatus != 0
    [line] = [line for line in output.splitlines() if line.startswith("Error:")]
    assert "served TLS on this data directory before" in line
    assert "TOBE_MIND__ALLOW_PLAINTEXT=true" in line
    assert service_pids(output) == [] and "ToBe is up." not in output
