"""The reconnect backoff keeps its cap: a service that is back is reached within 30 s."""

from __future__ import annotations

from tobe.runtime.backoff import Backoff


def test_delays_double_from_one_second_and_jitter_never_exceeds_the_cap() -> None:
    backoff = Backoff()
    delays = [backoff.next_delay() for _ in range(40)]
    assert 0.9 <= delays[0] <= 1.0 and 1.8 <= delays[1] <= 2.0
    assert all(delay <= 30.0 for delay in delays)
    assert max(delays) >= 27.0


def test_reset_starts_again_from_the_first_delay() -> None:
    backoff = Backoff()
    for _ in range(10):
        backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() <= 1.0
