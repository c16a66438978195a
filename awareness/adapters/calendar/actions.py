"""What each action does with its args, run in the worker thread against the account.

The JSON Schemas check shapes; what they cannot say (an end or a duration, a date for an
all-day event, a calendar that exists) is checked here with a `CalendarError` that says how to
write it instead.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from . import when
from .account import Account, Calendar, NewEvent
from .errors import CalendarError
from .occurrence import Occurrence

_TEXT = {"type": "string"}
_TIME = {"type": "string", "minLength": 1}


def _args(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(required),
        "properties": properties,
    }


EVENTS_ARGS = _args(
    {
        "start": {**_TIME, "description": "ISO 8601 date or date and time; default now."},
        "end": {**_TIME, "description": "ISO 8601; default start plus the look_ahead hours."},
        "calendar": {**_TEXT, "description": "Only this calendar (by name); default all."},
    }
)
CREATE_ARGS = _args(
    {
        "calendar": {**_TEXT, "description": "Calendar name; may be left out if there is one."},
        "summary": {"type": "string", "minLength": 1, "description": "The event's title."},
        "start": {
            **_TIME,
            "description": "ISO 8601 date and time (without an offset: in the configured "
            "time zone); a date like 2025-05-01 for an all-day event.",
        },
        "end": {**_TIME, "description": "Like start; for an all-day event the day after it."},
        "duration": {"type": "integer", "minimum": 1, "description": "Minutes, instead of end."},
        "location": _TEXT,
        "description": _TEXT,
        "all_day": {"type": "boolean", "description": "Dates without times; default false."},
    },
    "summary",
    "start",
)
MOVE_ARGS = _args(
    {
        "uid": {"type": "string", "minLength": 1},
        "start": {**_TIME, "description": "The new start (a date for an all-day event)."},
        "end": {**_TIME, "description": "The new end; default: the event keeps its duration."},
    },
    "uid",
    "start",
)
DELETE_ARGS = _args({"uid": {"type": "string", "minLength": 1}}, "uid")


def events(account: Account, args: dict[str, Any], now: datetime, look_ahead: timedelta) -> Any:
    start = when.instant(args["start"], account.zone, "start") if "start" in args else now
    end = when.instant(args["end"], account.zone, "end") if "end" in args else start + look_ahead
    if end <= start:
        raise CalendarError("end must be after start")
    name = args.get("calendar")
    calendars = [account.calendar(name)] if name is not None else account.calendars()
    found = account.occurrences(calendars, start, end)
    return {
        "start": start.astimezone(account.zone).isoformat(),
        "end": end.astimezone(account.zone).isoformat(),
        "events": [occurrence.shown(account.zone) for occurrence in found],
    }


def calendars(account: Account) -> Any:
    return {"calendars": [{"name": c.ref.name, "url": c.ref.url} for c in account.calendars()]}


def create(account: Account, args: dict[str, Any]) -> Occurrence:
    all_day = bool(args.get("all_day", False))
    start = when.moment(args["start"], all_day=all_day, zone=account.zone, field="start")
    if "end" in args and "duration" in args:
        raise CalendarError("give end or duration, not both")
    if "end" in args:
        end = when.moment(args["end"], all_day=all_day, zone=account.zone, field="end")
    elif all_day:
        if "duration" in args:
            raise CalendarError("an all-day event takes end (the day after its last day)")
        end = start + timedelta(days=1)
    elif "duration" in args:
        end = start + timedelta(minutes=args["duration"])
    else:
        raise CalendarError("an event with a time needs end or duration (minutes)")
    if end <= start:
        raise CalendarError("end must be after start")
    event = NewEvent(
        summary=args["summary"],
        start=start,
        end=end,
        location=args.get("location", ""),
        description=args.get("description", ""),
    )
    return account.create(_target(account, args.get("calendar")), event)


def _target(account: Account, name: str | None) -> Calendar:
    if name is not None:
        return account.calendar(name)
    calendars = account.calendars()
    if len(calendars) != 1:
        names = ", ".join(repr(c.ref.name) for c in calendars) or "none"
        raise CalendarError(f"name the calendar to create the event in (calendars: {names})")
    return calendars[0]
