"""Where the scheduler reads the time.

`SystemClock` in normal use. `FileClock` reads an ISO-8601 instant from a file on every
`now()`, so operators rehearsing schedules (and tests) move time by writing the file instead of
waiting; the loop's bounded sleep (`[scheduler] max_sleep`) notices a move within one sleep.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from mind.scheduler.model import Clock
from tobe.config import SchedulerSettings

log = logging.getLogger(__name__)


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FileClock:
    """The instant written in `path`; the system time while the file is missing or empty.

    A malformed instant is logged once (until the text changes) and the system time used, so
    a typo never stops the scheduler. An instant without an offset is read as UTC."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._reported = ""

    def now(self) -> datetime:
        try:
            text = self._path.read_text().strip()
        except FileNotFoundError:
            text = ""
        if not text:
            return datetime.now(UTC)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            if text != self._reported:
                self._reported = text
                log.error(
                    "scheduler clock file %s holds %r, not an ISO-8601 instant; "
                    "using the system time",
                    self._path,
                    text[:64],
                )
            return datetime.now(UTC)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)


def clock_from(settings: SchedulerSettings) -> Clock:
    """The clock `[scheduler] clock_file` asks for."""
    if settings.clock_file is not None:
        return FileClock(settings.clock_file)
    return SystemClock()
