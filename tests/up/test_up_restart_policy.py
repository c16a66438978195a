"""The restart rules of `tobe up` (`management.up_restarts`) and the quoting of its unit file."""

from __future__ import annotations

import pytest

from management.up_restarts import (
    RestartDelayError,
    RestartPolicy,
    exit_reason,
    first_delay,
    last_error_line,
)
from management.up_service_unit import unit_text


def test_delays_double_from_the_first_and_the_fifth_failure_within_a_minute_gives_up() -> None:
    policy = RestartPolicy(1.0)
    delays = [policy.failed(now, ran_for=0.5) for now in (0.0, 2.0, 5.0, 10.0, 19.0)]
    assert delays == [1.0, 2.0, 4.0, 8.0, None]


def test_failures_spread_over_more_than_a_minute_keep_restarting_up_to_30_s_apart() -> None:
    policy = RestartPolicy(1.0)
    # Each run lasts 20 s: never five failures within a minute, and never a full minute up.
    delays = [policy.failed(20.0 * n, ran_for=20.0) for n in range(1, 9)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_a_service_that_ran_a_whole_minute_starts_over_at_the_first_delay() -> None:
    policy = RestartPolicy(1.0)
    assert [policy.failed(now, ran_for=1.0) for now in (0.0, 2.0, 5.0)] == [1.0, 2.0, 4.0]
    assert policy.failed(100.0, ran_for=90.0) == 1.0


def test_the_first_delay_comes_from_the_environment_and_bad_values_are_refused() -> None:
    assert first_delay({}) == 1.0
    assert first_delay({"TOBE_UP_RESTART_DELAY": "0.2"}) == 0.2
    for bad in ("0", "-1", "soon", "31"):
        with pytest.raises(RestartDelayError, match="TOBE_UP_RESTART_DELAY"):
            first_delay({"TOBE_UP_RESTART_DELAY": bad})


def test_exit_reasons_name_the_status_or_the_signal() -> None:
    assert exit_reason(1) == "status 1"
    assert exit_reason(-9) == "killed by SIGKILL"


def test_the_last_error_line_skips_records_below_error() -> None:
    lines = [
        "2026-12-06 20:00:00,001 face INFO face.server: starting\n",
        "Error: face cannot listen on 127.0.0.1:7420: in use\n",
        "2026-12-06 20:00:00,002 face INFO tobe.runtime.server: draining\n",
        "\n",
    ]
    assert last_error_line(lines) == "Error: face cannot listen on 127.0.0.1:7420: in use"
    assert last_error_line(lines[:1]) == "2026-12-06 20:00:00,001 face INFO face.server: starting"
    assert last_error_line([]) == "(it wrote nothing to its log)"


def test_unit_values_escape_specifiers_quotes_and_expansions() -> None:
    text = unit_text({"TOBE_DATA_DIR": '/srv/100% "mine" $HOME'})
    assert 'Environment="TOBE_DATA_DIR=/srv/100%% \\"mine\\" $HOME"' in text
