"""Removal of adapters' sensitive config values from any text the process shows or logs.

Adapters may put a secret into an exception or a log line by accident; the engine registers
every `x-sensitive` value here, and both error messages and the log handler pass through
`Scrubber.scrub`. Values shorter than `MIN_LENGTH` are not scrubbed (masking every "1" would
make messages unreadable; such values are not secrets worth the name).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from awareness.config_files import MASK

MIN_LENGTH = 4


class Scrubber:
    """Thread-safe set of secret strings, keyed by owner (an adapter id)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_owner: dict[str, frozenset[str]] = {}
        self._all: tuple[str, ...] = ()

    def register(self, owner: str, values: Iterable[str]) -> None:
        with self._lock:
            self._by_owner[owner] = frozenset(v for v in values if len(v) >= MIN_LENGTH)
            self._rebuild()

    def forget(self, owner: str) -> None:
        with self._lock:
            self._by_owner.pop(owner, None)
            self._rebuild()

    def _rebuild(self) -> None:
        # Longest first, so a secret containing another is masked whole.
        values = {v for group in self._by_owner.values() for v in group}
        self._all = tuple(sorted(values, key=len, reverse=True))

    def scrub(self, text: str) -> str:
        for value in self._all:
            if value in text:
                text = text.replace(value, MASK)
        return text


class ScrubbingFilter(logging.Filter):
    """Logging filter applying a Scrubber to the formatted message and traceback."""

    def __init__(self, scrubber: Scrubber) -> None:
        super().__init__()
        self._scrubber = scrubber

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = self._scrubber.scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._scrubber.scrub(record.exc_text)
        return True
