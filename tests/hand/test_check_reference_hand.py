"""`tobe hand check` against the reference Hand (`tobe hand serve`): with the conformance tools
it passes every scenario; without them the check refuses it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hand_check import reference_hand, run_check

from hand.check.scenarios import SCENARIOS

# A whole check takes tens of seconds: its scenarios wait out heartbeats and timeouts.
pytestmark = [pytest.mark.e2e, pytest.mark.long_running]


def test_the_reference_hand_passes_every_scenario(tmp_path: Path) -> None:
    status, output = run_check(tmp_path, reference_hand(tmp_path))
    assert status == 0, output
    assert f"{len(SCENARIOS)} passed, 0 failed" in output


def test_a_hand_without_the_conformance_tools_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = tmp_path / "plain.sh"
    script.write_text(
        f'exec "{sys.executable}" -m tobe hand serve --name laptop '
        f'--workspace "{workspace}" --mind "$1" --token-file "$2"\n'
    )
    status, output = run_check(tmp_path, ["sh", str(script)], "normal")
    assert status == 1, output
    assert "lacks the conformance tools conformance_echo, conformance_wait" in output
