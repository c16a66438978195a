"""When `tobe up` restarts a service that exited, like systemd's `Restart=on-failure` with a
start limit: after 1 s doubling to 30 s, until it fails `START_LIMIT` times within
`START_LIMIT_INTERVAL` seconds; then it is left stopped and the others keep serving.

A clean exit (status 0) is not a failure and is not restarted. The delay starts over once a
service ran for a whole `START_LIMIT_INTERVAL` before it failed. `TOBE_UP_RESTART_DELAY`
(seconds) sets the first delay, e.g. for tests that make a service fail on purpose.
"""

from __future__ import annotations

import re
import signal
from collections import deque
from dataclasses import dataclass, field

from tobe.runtime.backoff import Backoff

START_LIMIT = 5
START_LIMIT_INTERVAL = 60.0
MAX_DELAY = 30.0
DELAY_ENV = "TOBE_UP_RESTART_DELAY"
# A log record below ERROR (`<date> <time> <process> LEVEL …`), never a service's last error.
_QUIET_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ \S+ (DEBUG|INFO|WARNING) ")


class RestartDelayError(ValueError):
    """`TOBE_UP_RESTART_DELAY` is not a positive number of seconds."""


def first_delay(env: dict[str, str]) -> float:
    """The first restart delay: `TOBE_UP_RESTART_DELAY` seconds, else 1."""
    raw = env.get(DELAY_ENV)
    if raw is None:
        return 1.0
    try:
        delay = float(raw)
    except ValueError:
        delay = 0.0
    if not 0 < delay <= MAX_DELAY:
        raise RestartDelayError(
            f"{DELAY_ENV}={raw!r} is not a number of seconds above 0 and at most {MAX_DELAY:.0f}"
        )
    return delay


@dataclass
class RestartPolicy:
    """One service's failures: how long to wait before its next start, or that it is done."""

    initial: float = 1.0
    _backoff: Backoff = field(init=False)
    _failures: deque[float] = field(default_factory=deque, init=False)

    def __post_init__(self) -> None:
        self._backoff = Backoff(initial=self.initial, maximum=MAX_DELAY, jitter=0.0)

    def failed(self, now: float, ran_for: float) -> float | None:
        """The delay before restarting a service that failed at `now` after running
        `ran_for` seconds; None once it failed `START_LIMIT` times within the interval."""
        if ran_for >= START_LIMIT_INTERVAL:
            self._backoff.reset()
        self._failures.append(now)
        while self._failures[0] < now - START_LIMIT_INTERVAL:
            self._failures.popleft()
        if len(self._failures) >= START_LIMIT:
            return None
        return self._backoff.next_delay()

    @property
    def recent_failures(self) -> int:
        return len(self._failures)


def exit_reason(returncode: int) -> str:
    """`status 1`, or `killed by SIGKILL` for a process a signal ended."""
    if returncode >= 0:
        return f"status {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


def last_error_line(lines: list[str]) -> str:
    """The line of a service's log (this start) that best says why it ended: the last one
    that is not a record below ERROR (an error record, `Error: …`, a traceback's end), else
    its last line."""
    said = [line.strip() for line in lines if line.strip()]
    for line in reversed(said):
        if not _QUIET_RECORD.match(line):
            return line
    return said[-1] if said else "(it wrote nothing to its log)"
