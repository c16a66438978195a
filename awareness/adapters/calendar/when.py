"""Reading the times an agent passes to actions, with errors that say what to write instead.

A time without an offset is read in the configured zone. Timed values are stored in UTC, so
the server never has to resolve a zone it may not know.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, tzinfo

from .errors import CalendarError


def instant(text: str, zone: tzinfo, field: str) -> datetime:
    """A bound of a time range: a date (its midnight) or a date and time."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise CalendarError(
            f"{field} must be an ISO 8601 date or date and time like 2025-05-01 or "
            f"2025-05-01T14:00:00+02:00, not {text!r}"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=zone)


def moment(text: str, *, all_day: bool, zone: tzinfo, field: str) -> date | datetime:
    """The start or end of an event: a date for an all-day event, else a date and time."""
    day = _date(text)
    if all_day:
        if day is None:
            raise CalendarError(
                f"{field} of an all-day event must be a date like 2025-05-01, not {text!r}"
            )
        return day
    if day is not None:
        raise CalendarError(
            f"{field} needs a time of day, like {text}T14:00:00+02:00 "
            "(an all-day event takes dates and all_day: true)"
        )
    return instant(text, zone, field).astimezone(UTC)


def _date(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None
