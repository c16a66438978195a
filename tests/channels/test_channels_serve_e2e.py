"""`tobe channels serve` as a real process: refused in one line with nothing to run; with a
channel whose network is down it answers its probe, keeps retrying the channel with a log line
that shows no secret, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.eventually import eventually
from helpers.ports import free_port

from tobe.runtime.probe_answer import read_answer

pytestmark = pytest.mark.e2e

PASSWORD = "bot-password-never-logged"
STOP_TIMEOUT = 30


def channels_env(data_dir: Path, config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(TOBE_DATA_DIR=str(data_dir), TOBE_CONFIG=str(config))
    return env


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir(mode=0o700)
    return path


def test_with_no_channel_enabled_it_exits_2_with_one_line(tmp_path: Path, data_dir: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tobe", "channels", "serve"],
        env=channels_env(data_dir, tmp_path / "absent.toml"),
        capture_output=True,
        text=True,
        timeout=STOP_TIMEOUT,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "Error: no channel is enabled: set enabled = true in [channels.matrix] or "
        "[channels.email] of the configuration (see docs/channels.md)"
    ]
    assert not (data_dir / "channels").exists()


@pytest.fixture
def serving(tmp_path: Path, data_dir: Path) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    """The channels process with Matrix enabled on a homeserver nobody serves."""
    probe = f"unix:{tmp_path / 'channels-probe.sock'}"
    config = tmp_path / "config.toml"
    config.write_text(
        f'[channels]\nprobe_listen = "{probe}"\n'
        "[channels.matrix]\nenabled = true\n"
        f'homeserver = "http://127.0.0.1:{free_port()}"\n'
        f'user_id = "@tobe:example.org"\npassword = "{PASSWORD}"\n'
    )
    log = tmp_path / "channels.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "tobe", "channels", "serve"],
            env=channels_env(data_dir, config),
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        yield process, probe, log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_channel_whose_network_is_down_is_retried_and_sigterm_stops_the_process(
    serving: tuple[subprocess.Popen[str], str, Path], data_dir: Path
) -> None:
    process, probe, log = serving
    eventually(
        lambda: read_answer(probe, 1.0),
        until=lambda answer: answer == "SERVING",
        what="the channels process answering SERVING on its probe",
        context=log.read_text,
    )
    eventually(
        lambda: log.read_text().count("channel matrix stopped: "),
        until=lambda count: count >= 2,
        what="the matrix channel failing and being started again",
        context=log.read_text,
    )
    process.send_signal(signal.SIGTERM)
    assert process.wait(STOP_TIMEOUT) == 0
    text = log.read_text()
    assert "channels stopped" in text
    assert PASSWORD not in text
    assert "Traceback" not in text
    # Its state file, owner-only, in the data directory.
    assert oct((data_dir / "channels" / "state.db").stat().st_mode & 0o777) == "0o600"
