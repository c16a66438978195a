"""Which occurrences are due to be observed, each once, across restarts.

An occurrence is due from `lead_time` before its start until it starts; one first seen inside
that window is due at once, one already started never. What has been observed is kept in
`data/observed.json` by occurrence key (uid and start, so a moved event is due again for its
new time) and forgotten once the occurrence has started: it can never be due again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from awareness.adapter import AdapterContext

from .occurrence import Occurrence

OBSERVED = "observed.json"  # in data/: {occurrence key: start in UTC, ISO 8601}


class Reminders:
    def __init__(self, context: AdapterContext, lead_time: timedelta) -> None:
        self.context = context
        self.lead_time = lead_time

    def window(self, now: datetime) -> tuple[datetime, datetime]:
        """The range to search: it holds every occurrence due at `now`, with a minute to spare."""
        return now, now + self.lead_time + timedelta(minutes=1)

    def due(self, occurrences: Sequence[Occurrence], now: datetime) -> list[Occurrence]:
        """The occurrences to observe now, in the order given; forgets started ones."""
        observed = self._load()
        kept = {
            key: start for key, start in observed.items() if datetime.fromisoformat(start) > now
        }
        if kept != observed:
            self.context.save_json(OBSERVED, kept)
        due: dict[str, Occurrence] = {}
        for o in occurrences:
            if o.start - self.lead_time <= now < o.start and o.key not in kept:
                due.setdefault(o.key, o)
        return list(due.values())

    def mark(self, occurrence: Occurrence) -> None:
        """Record that `occurrence` has been observed."""
        observed = self._load()
        observed[occurrence.key] = occurrence.start.isoformat()
        self.context.save_json(OBSERVED, observed)

    def _load(self) -> dict[str, str]:
        observed: dict[str, str] = self.context.load_json(OBSERVED) or {}
        return observed
