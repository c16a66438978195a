"""`hand.command_guard`, the process between the Hand and each command (Linux)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hand import command_guard

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def test_a_guard_whose_hand_died_before_it_could_follow_it_starts_nothing(tmp_path: Path) -> None:
    # The guard's parent is not the Hand it was told to follow: that Hand is gone, and a
    # death signal asked for now would follow the parent it was handed on to.
    ran = tmp_path / "ran"
    not_the_parent = str(os.getpid() + 1)
    guard = [sys.executable, "-I", "-S", command_guard.__file__, not_the_parent, "-1"]
    done = subprocess.run([*guard, "--", "touch", str(ran)], timeout=30)
    assert done.returncode == 128 + signal.SIGTERM
    assert not ran.exists()
