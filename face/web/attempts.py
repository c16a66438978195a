"""Failed pairing attempts per client address: a one-minute sliding window.

A pairing code has 50 random bits and lives minutes, so guessing is hopeless unless attempts
are unlimited; after `face.web.pair_attempts_per_minute` failures in the last minute an address
is refused (HTTP 429) until the oldest failure is a minute old. Memory stays bounded: windows
that emptied are dropped whenever the table grows past `SWEEP_AT` addresses.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

WINDOW_SECONDS = 60.0
SWEEP_AT = 1024


class FailedAttempts:
    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = per_minute
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def blocked(self, address: str) -> float:
        """Seconds until `address` may try again; 0 when it may now."""
        window = self._window(address)
        if len(window) < self._limit:
            return 0.0
        return max(0.0, window[0] + WINDOW_SECONDS - self._clock())

    def failed(self, address: str) -> None:
        if len(self._failures) >= SWEEP_AT:
            for other in list(self._failures):
                self._window(other)
        self._failures.setdefault(address, deque()).append(self._clock())

    def _window(self, address: str) -> deque[float]:
        window = self._failures.get(address)
        if window is None:
            return deque()
        horizon = self._clock() - WINDOW_SECONDS
        while window and window[0] <= horizon:
            window.popleft()
        if not window:
            del self._failures[address]
        return window
