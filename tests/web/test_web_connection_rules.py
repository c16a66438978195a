"""The web client's modules pass their Node tests (face/web/test, run by Node's test runner):
the connection module obeys the frame rules against a scripted WebSocket — the cases a real
server cannot be made to produce on demand: a sequence gap, a resume the Mind no longer keeps,
the backoff's schedule — and scheduled actions are worded as `tobe chat` words them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_web_client_modules_pass_their_node_tests() -> None:
    node = shutil.which("node")
    assert node is not None, "Node.js is needed (Debian: apt-get install nodejs)"
    result = subprocess.run(
        [node, "--test", str(ROOT / "face" / "web" / "test")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
