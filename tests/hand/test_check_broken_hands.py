"""`tobe hand check` against Hands broken in one behaviour each: each fails the scenario that
checks that behaviour, quoting hand.proto and saying what the Hand did."""

from __future__ import annotations

from pathlib import Path

import pytest
from hand_check import failed, run_check, sdk_hand

from hand.check.scenarios import SCENARIOS

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]
BROKEN = {
    "accepts-a-wrong-digest": (
        "hand._hand._digest_problem = lambda arguments, digest: None\nhand = Hand('broken')",
        ("approvals",),
        "accepted a conformance_write offer whose approval digest is not the digest",
    ),
    "sends-the-result-twice": (
        "class Broken(Hand):\n"
        "    def _send_result(self, held):\n"
        "        super()._send_result(held)\n"
        "        super()._send_result(held)\n"
        "hand = Broken('broken')",
        ("normal",),
        "after the result's ack, the Hand still sent result",
    ),
    "ignores-cancels": (
        "class Broken(Hand):\n"
        "    def _on_cancel(self, cancel):\n"
        "        pass\n"
        "hand = Broken('broken')",
        ("cancel",),
        "the Hand did not stop and report a cancelled result",
    ),
    "skips-accepted-without-the-grant": (
        "class Broken(Hand):\n"
        "    @property\n"
        "    def _result_accepted(self):\n"
        "        return True\n"
        "    @_result_accepted.setter\n"
        "    def _result_accepted(self, value):\n"
        "        pass\n"
        "hand = Broken('broken')",
        # Without the grant every offer must be answered first: approvals' offers too.
        ("normal", "approvals"),
        "the first report after the offer was result",
    ),
    "never-accepts-a-running-task-when-granted": (
        "class Broken(Hand):\n"
        "    def _confirm(self, held):\n"
        "        pass\n"
        "hand._hand.ACCEPT_DELAY = 10\n"
        "hand = Broken('broken')",
        ("granted",),
        "the first report of a task still running was progress",
    ),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_hand_fails_the_scenario_that_checks_its_fault(
    tmp_path: Path, broken: str
) -> None:
    source, scenarios, explanation = BROKEN[broken]
    only = ("normal", "cancel", "approvals", "granted")
    status, output = run_check(tmp_path, sdk_hand(tmp_path, source), *only)
    assert status == 1, output
    assert failed(output) == set(scenarios), output
    quote = next(s.quote for s in SCENARIOS if s.name == scenarios[0])
    assert f"hand.proto says: {' … '.join(quote)}" in output
    assert explanation in output
