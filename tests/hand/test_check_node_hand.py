"""`tobe hand check` against the Node.js example Hand (`examples/node-hand`): it passes every
scenario, as the reference Hand does."""

from __future__ import annotations

from pathlib import Path

import pytest
from hand_check import node_hand, run_check

from hand.check.scenarios import SCENARIOS

# A whole check takes tens of seconds: its scenarios wait out heartbeats and timeouts.
pytestmark = [pytest.mark.e2e, pytest.mark.long_running]


def test_the_node_example_hand_passes_every_scenario(tmp_path: Path) -> None:
    status, output = run_check(tmp_path, node_hand())
    assert status == 0, output
    assert f"{len(SCENARIOS)} passed, 0 failed" in output
