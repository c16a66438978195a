"""Events per key in a one-minute sliding window, for limits answered with HTTP 429.

Failed pairing attempts per client address: a pairing code has 50 random bits and lives
minutes, so guessing is hopeless unless attempts are unlimited; after
`face.web.pair_attempts_per_minute` failures in the last minute an address is refused until the
oldest failure is a minute old. Chat completions per credential
(`face.web.openai_requests_per_minute`) likewise. Memory stays bounded: windows that emptied
are dropped whenever the table grows past `SWEEP_AT` keys.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

WINDOW_SECONDS = 60.0
SWEEP_AT = 1024


class MinuteLimit:
    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = per_minute
        self._clock = clock
        self._events: dict[str, deque[float]] = {}

    def blocked(self, key: str) -> float:
        """Seconds until `key` may try again; 0 when it may now."""
        window = self._window(key)
        if len(window) < self._limit:
            return 0.0
        return max(0.0, window[0] + WINDOW_SECONDS - self._clock())

    def count(self, key: str) -> None:
        """One more event of `key` now."""
        if len(self._events) >= SWEEP_AT:
            for other in list(self._events):
                self._window(other)
        self._events.setdefault(key, deque()).append(self._clock())

    def _window(self, key: str) -> deque[float]:
        window = self._events.get(key)
        if window is None:
            return deque()
        horizon = self._clock() - WINDOW_SECONDS
        while window and window[0] <= horizon:
            window.popleft()
        if not window:
            del self._events[key]
        return window
