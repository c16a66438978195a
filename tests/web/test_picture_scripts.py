"""The scripts that draw the web client's committed pictures (the README's screenshots, the
app's icons) answer `--help` and a wrong argument without drawing anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# script → the directory of the pictures it draws
SCRIPTS = {
    "web_screenshots.py": ROOT / "docs" / "images",
    "web_icons.py": ROOT / "face" / "web" / "static" / "icons",
}


def _drawn(pictures: Path) -> dict[str, int]:
    return {path.name: path.stat().st_mtime_ns for path in pictures.glob("*.png")}


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_and_a_wrong_argument_draw_nothing(script: str) -> None:
    before = _drawn(SCRIPTS[script])
    helped = _run(script, "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage:") and "writes" in helped.stdout
    wrong = _run(script, "--no-such-option")
    assert wrong.returncode == 2 and "unrecognized arguments" in wrong.stderr
    assert _drawn(SCRIPTS[script]) == before
