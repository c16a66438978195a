"""What a person running a Hand sees, against a real Mind process: one line when it attaches,
disconnects and before each reconnect (with no logging configured by the script), reattaching
on the first attempt after a killed Mind is back, and one `Error:` line (no traceback, status
1) for a credential that cannot work, from an SDK script and from `tobe hand serve` (which
finds the Mind through the data directory's runtime file)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from helpers.admin_cli import Admin
from helpers.eventually import eventually
from helpers.mind_process import MindProcess, issue_token, running_mind

from tobe.runtime.addresses import publish

pytestmark = pytest.mark.e2e

DEADLINE = 60.0
# Configures no logging at all: the lines must show anyway.
SCRIPT = """
import os, sys
from hand import Hand

hand = Hand(sys.argv[2] if len(sys.argv) > 2 else "laptop")


@hand.tool
def ping() -> str:
    \"\"\"Answer pong.\"\"\"
    return "pong"


hand.run(sys.argv[1], os.environ["TOBE_HAND_TOKEN"])
"""
DELAY = re.compile(r"reconnecting in (\d+\.\d)s")


@dataclass
class Running:
    """A Hand process whose stderr lines are collected as they come."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def count(self, needle: str) -> int:
        return sum(needle in line for line in list(self.lines))

    def wait_for(self, needle: str, times: int = 1) -> None:
        eventually(
            lambda: self.count(needle) >= times,
            DEADLINE,
            what=f"{times}× {needle!r} from the Hand",
            context=lambda: "\n".join(self.lines[-20:]),
        )


def hand_env(tmp_path: Path, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(
        TOBE_CONFIG=str(tmp_path / "absent-config.toml"),
        TOBE_DATA_DIR=str(tmp_path / "hand-data"),
        TOBE_HAND_TOKEN=token,
    )
    return env


def script(tmp_path: Path) -> Path:
    path = tmp_path / "garden_hand.py"
    path.write_text(SCRIPT)
    return path


def finished(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=DEADLINE)


def assert_one_error_line(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], result.stderr


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    with running_mind(tmp_path_factory.mktemp("lines"), script=None, clients=()) as process:
        yield process


def test_a_placeholder_credential_ends_an_sdk_script_with_one_line(
    tmp_path: Path, mind: MindProcess
) -> None:
    result = finished(
        [sys.executable, str(script(tmp_path)), mind.address],
        hand_env(tmp_path, "<hand credential>"),
    )
    assert_one_error_line(result, "placeholder like '<hand credential>'")


def test_a_refused_name_ends_an_sdk_script_with_one_line(tmp_path: Path, mind: MindProcess) -> None:
    token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
    result = finished(
        [sys.executable, str(script(tmp_path)), mind.address, "greenhouse"],
        hand_env(tmp_path, token),
    )
    assert_one_error_line(result, "PERMISSION_DENIED", "'greenhouse' is not granted")


@pytest.mark.parametrize(
    ("credential", "needles"),
    [
        ("revoked", ("UNAUTHENTICATED", "tobe admin whoami", "credentials create --kind hand")),
        ("tobe_0123456789abcdef_malformed", ("UNAUTHENTICATED",)),
    ],
)
def test_a_credential_the_mind_refuses_ends_hand_serve_with_one_line(
    tmp_path: Path, mind: MindProcess, credential: str, needles: tuple[str, ...]
) -> None:
    if credential == "revoked":
        credential = revoked_token(mind)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # No --mind: the Hand finds the Mind where it published its address in the data directory.
    publish(tmp_path / "hand-data", "mind", mind.address)
    result = finished(
        [sys.executable, "-m", "tobe", "hand", "serve"]
        + ["--name", "laptop", "--workspace", str(workspace)],
        hand_env(tmp_path, credential),
    )
    assert_one_error_line(result, "the Mind refused this Hand", *needles)


def revoked_token(mind: MindProcess) -> str:
    """A Hand credential created and revoked through the running Mind's Management service."""
    admin = Admin(mind.data_dir)
    created = admin.json("credentials", "create", "--kind", "hand", "--principal", "laptop")
    admin.run("credentials", "revoke", created["credential"]["id"])
    return str(created["secret"])


def test_hand_serve_says_it_reconnects_across_a_mind_restart_and_ends_with_one_line_once_revoked(
    tmp_path: Path, mind: MindProcess
) -> None:
    admin = Admin(mind.data_dir)
    created = admin.json(
        "credentials", "create", "--kind", "hand", "--principal", "laptop", "--scope", "serve:alice"
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    hand = Running(
        subprocess.Popen(
            [sys.executable, "-m", "tobe", "hand", "serve", "--mind", mind.address]
            + ["--name", "laptop", "--workspace", str(workspace)],
            env=hand_env(tmp_path, str(created["secret"])),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    try:
        hand.wait_for("attached as laptop")
        mind.kill()
        hand.wait_for("reconnecting in")
        mind.start(mind.address)
        hand.wait_for("attached as laptop", times=2)
        reconnects = hand.count("reconnecting in")

        # Revoked while attached: the stream ends for good, no reconnect loop.
        admin.run("credentials", "revoke", created["credential"]["id"])
        status = hand.process.wait(DEADLINE)
        eventually(
            lambda: any(line.startswith("Error: ") for line in hand.lines),
            DEADLINE,
            what="the Hand's Error line",
        )
    finally:
        hand.process.kill()
        hand.process.wait(10)

    assert status == 1, hand.lines
    errors = [line for line in hand.lines if line.startswith("Error: ")]
    assert len(errors) == 1, hand.lines
    assert "the Mind refused this Hand (UNAUTHENTICATED" in errors[0], hand.lines
    assert "tobe admin whoami" in errors[0]
    assert hand.count("reconnecting in") == reconnects, hand.lines
    assert not any("Traceback" in line for line in hand.lines), hand.lines


def test_a_hand_says_when_it_attaches_and_reattaches_at_once_after_a_mind_restart(
    tmp_path: Path, mind: MindProcess
) -> None:
    token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
    hand = Running(
        subprocess.Popen(
            [sys.executable, str(script(tmp_path)), mind.address],
            env=hand_env(tmp_path, token),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    try:
        hand.wait_for("attached as laptop")
        attached = next(line for line in hand.lines if "attached as laptop" in line)
        assert f"connected to {mind.address}, attached as laptop (h_" in attached
        assert attached.endswith("serving alice, laptop, 1 tool")

        mind.kill()
        hand.wait_for(f"disconnected from the Mind at {mind.address} (UNAVAILABLE")
        hand.wait_for("stream to the Mind failed (UNAVAILABLE")
        mind.start(mind.address)
        listening = time.time()  # the Mind listened a little earlier still
        hand.wait_for("attached as laptop", times=2)
    finally:
        hand.process.kill()
        hand.process.wait(10)

    delays = [float(found) for line in hand.lines for found in DELAY.findall(line)]
    assert delays[0] <= 1.0, "the backoff was not reset by the long healthy connection"
    assert all(delay <= 30.0 for delay in delays)
    # An attempt that failed although it began once the Mind listened again: a channel (or
    # subchannel) kept across attempts did that, failing at once in its own reconnect backoff.
    assert failed_attempts_begun_after(hand.lines, listening) == [], (listening, hand.lines)


def failed_attempts_begun_after(lines: list[str], moment: float) -> list[str]:
    """The failure lines of attempts that began after `moment` (wall clock): an attempt
    begins the announced delay after the line announcing it (the sleep only ever overshoots)."""
    failed, begins = [], None
    for line in lines:
        if "stream to the Mind failed" in line and begins is not None and begins > moment:
            failed.append(line)
        announced = DELAY.search(line)
        if announced:
            begins = stamp(line) + float(announced.group(1))
    return failed


def stamp(line: str) -> float:
    """The wall-clock time of a line of the Hand's default log format."""
    logged = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    return logged.timestamp()
