"""Reconnect backoff: 1 s doubling to 30 s, with jitter, reset after a success."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays for successive reconnect attempts, never longer than `maximum`.

    Jitter (up to 10 %) keeps many clients from reconnecting in lockstep after a restart; it
    shortens a delay rather than lengthening it, so the cap is a promise: a service that is
    back is reached within `maximum` seconds.
    """

    initial: float = 1.0
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.1
    _current: float = field(default=0.0, init=False)

    def next_delay(self) -> float:
        self._current = (
            self.initial if self._current == 0 else min(self._current * self.factor, self.maximum)
        )
        return self._current * (1 - random.uniform(0, self.jitter))

    def reset(self) -> None:
        self._current = 0.0
