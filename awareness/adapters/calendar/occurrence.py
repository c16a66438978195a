"""One occurrence of an event (a recurring event expanded), with its times made comparable.

iCalendar allows dates (all-day events), floating times and zoned times; an occurrence holds
aware datetimes only: dates and floating times are read in the configured time zone, so that
"is it due" and "sort by start" compare like with like.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, tzinfo
from typing import Any

# Longer descriptions are cut: an observation is a reminder, not the event's whole text.
DESCRIPTION_LIMIT = 1000


@dataclass(frozen=True)
class CalendarRef:
    """A calendar as the adapter names it: its display name and its URL."""

    name: str
    url: str


@dataclass(frozen=True)
class Occurrence:
    uid: str
    calendar: CalendarRef
    summary: str
    start: datetime
    end: datetime
    all_day: bool
    location: str
    description: str

    @property
    def key(self) -> str:
        """Names this occurrence at this time: a moved event gets a new key."""
        return f"{self.uid} {self.start.astimezone(UTC).isoformat()}"

    def shown(self, zone: tzinfo) -> dict[str, Any]:
        """The occurrence as actions return it, times in `zone` with their offset."""
        description = self.description
        if len(description) > DESCRIPTION_LIMIT:
            description = description[: DESCRIPTION_LIMIT - 1] + "…"
        return {
            "uid": self.uid,
            "calendar": self.calendar.name,
            "summary": self.summary,
            "start": self.start.astimezone(zone).isoformat(),
            "end": self.end.astimezone(zone).isoformat(),
            "all_day": self.all_day,
            "location": self.location,
            "description": description,
        }

    def observed(self, zone: tzinfo, now: datetime) -> dict[str, Any]:
        """The content of the observation that this occurrence starts soon."""
        minutes = math.ceil((self.start - now).total_seconds() / 60)
        return {"kind": "calendar_event", **self.shown(zone), "minutes_until_start": minutes}


def from_component(component: Any, calendar: CalendarRef, zone: tzinfo) -> Occurrence:
    """An occurrence from an icalendar VEVENT (one expanded occurrence or a single event)."""
    start, end = component.start, component.end
    return Occurrence(
        uid=str(component.get("uid", "")),
        calendar=calendar,
        summary=str(component.get("summary", "")),
        start=aware(start, zone),
        end=aware(end, zone),
        all_day=not isinstance(start, datetime),
        location=str(component.get("location", "")),
        description=str(component.get("description", "")),
    )


def aware(value: date | datetime, zone: tzinfo) -> datetime:
    """A date as midnight in `zone`, a floating time as a time in `zone`, else as it is."""
    if not isinstance(value, datetime):
        return datetime.combine(value, time(), tzinfo=zone)
    return value if value.tzinfo is not None else value.replace(tzinfo=zone)
