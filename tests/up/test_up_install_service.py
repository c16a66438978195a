"""`tobe up --install-service` writes a systemd user unit that runs this `tobe up`, and says
how to enable it; it starts nothing."""

from __future__ import annotations

import configparser
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from helpers.up_process import clean_env, printed, spawn, up_env

pytestmark = pytest.mark.e2e


def _service_section(unit: Path) -> dict[str, list[str]]:
    """The [Service] settings, each with every value it was given (Environment repeats)."""
    values: dict[str, list[str]] = {}
    section = ""
    for line in unit.read_text().splitlines():
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif section == "Service" and "=" in line:
            key, value = line.split("=", 1)
            values.setdefault(key, []).append(value)
    return values


def test_install_service_writes_a_unit_that_runs_this_tobe_up(tmp_path: Path) -> None:
    data_dir = tmp_path / "data dir"
    env = up_env(data_dir, listen=False)
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), ANTHROPIC_API_KEY="sk-not-in-the-unit")
    done = subprocess.run(
        [sys.executable, "-m", "tobe", "up", "--install-service", "--port-base", "0", "--no-web"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    unit = tmp_path / "config" / "systemd" / "user" / "tobe.service"
    assert f"Wrote {unit}: `tobe up` on {data_dir}." in done.stdout
    assert (
        "Start ToBe now and at every login: systemctl --user daemon-reload && "
        "systemctl --user enable --now tobe.service"
    ) in done.stdout
    assert "Not carried over from this shell: ANTHROPIC_API_KEY" in done.stdout
    assert "sk-not-in-the-unit" not in unit.read_text()
    assert not data_dir.exists()  # nothing was started

    parsed = configparser.ConfigParser(strict=False, interpolation=None)
    parsed.read_string(unit.read_text())
    assert parsed["Install"]["WantedBy"] == "default.target"
    service = _service_section(unit)
    assert service["Restart"] == ["on-failure"]
    assert service["KillMode"] == ["mixed"]
    environment = dict(shlex.split(value)[0].split("=", 1) for value in service["Environment"])
    assert environment == {
        "TOBE_DATA_DIR": str(data_dir),
        "TOBE_CONFIG": env["TOBE_CONFIG"],
        "TOBE_MIND__LISTEN": "127.0.0.1:0",
        "TOBE_FACE__LISTEN": "127.0.0.1:0",
        "TOBE_AWARENESS__LISTEN": "127.0.0.1:0",
        "TOBE_FACE__WEB__ENABLED": "false",
    }
    if shutil.which("systemd-analyze"):
        verified = subprocess.run(
            ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
        )
        assert verified.returncode == 0, verified.stderr

    # What systemd would run starts ToBe on that data directory.
    [command] = service["ExecStart"]
    argv = shlex.split(command)
    assert argv == [sys.executable, "-m", "tobe", "up"]
    # A user manager's environment: none of this shell's ToBe settings or keys.
    up = spawn(argv[3:], clean_env() | environment)
    try:
        up.expect("ToBe is up.")
        assert f"Data directory: {data_dir}" in printed(up)
        up.kill(signal.SIGTERM)  # as systemd stops it
        up.expect(pexpect.EOF, timeout=60)
        up.close()
        assert up.exitstatus == 0
    finally:
        up.close(force=True)

    again = subprocess.run(
        [sys.executable, "-m", "tobe", "up", "--install-service"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"Replaced {unit}" in again.stdout
