"""The CalDAV account: every request to the server, made synchronously.

The `caldav` library blocks, so the adapter runs these methods in a worker thread, one at a
time. Its objects are typed `Any` here: its methods return sync-or-async unions that only this
module sees. Every failure leaves as a `CalendarError` whose message names the server and the
user, never the password. `caldav` and `icalendar` are loaded by the first account: an
Awareness whose calendar is not configured never loads them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from . import when
from .errors import CalendarError
from .occurrence import CalendarRef, Occurrence, from_component

# Seconds one request may take before it counts as failed.
REQUEST_TIMEOUT = 30
PRODID = "-//ToBe//calendar adapter//EN"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Calendar:
    ref: CalendarRef
    remote: Any  # caldav.Calendar


@dataclass(frozen=True)
class NewEvent:
    summary: str
    start: date | datetime
    end: date | datetime
    location: str
    description: str


class Account:
    """One login on one CalDAV server, limited to the calendars named in `watched` (all if
    empty)."""

    def __init__(
        self, *, url: str, username: str, password: str, watched: Sequence[str], zone: tzinfo
    ) -> None:
        from caldav.davclient import DAVClient

        self.zone = zone
        self._watched = list(watched)
        self._shown_url = _without_userinfo(url)
        self._username = username
        self._client: Any = DAVClient(
            url=url,
            username=username or None,
            password=password or None,
            timeout=REQUEST_TIMEOUT,
        )
        self._principal: Any = None

    def connect(self) -> None:
        """Log in and check that every watched calendar exists."""
        with self._talking():
            self._principal = self._client.get_principal()
        self.calendars()

    def close(self) -> None:
        self._client.close()

    # -- reading ---------------------------------------------------------------------------

    def calendars(self) -> list[Calendar]:
        """The watched calendars, as the server lists them now."""
        with self._talking():
            listed = [
                Calendar(CalendarRef(name=_name(remote), url=str(remote.url)), remote)
                for remote in self._principal.get_calendars()
            ]
        if not self._watched:
            return listed
        names = {calendar.ref.name for calendar in listed}
        missing = [name for name in self._watched if name not in names]
        if missing:
            raise CalendarError(
                f"calendar(s) {', '.join(map(repr, missing))} named in the config are not in "
                f"the account of {self._username!r} at {self._shown_url} "
                f"(it has: {_listing(listed)})"
            )
        return [calendar for calendar in listed if calendar.ref.name in self._watched]

    def calendar(self, name: str) -> Calendar:
        calendars = self.calendars()
        for calendar in calendars:
            if calendar.ref.name == name:
                return calendar
        raise CalendarError(f"no calendar named {name!r} (calendars: {_listing(calendars)})")

    def occurrences(
        self, calendars: Sequence[Calendar], start: datetime, end: datetime
    ) -> list[Occurrence]:
        """Occurrences overlapping [start, end) in `calendars`, recurring events expanded,
        sorted by start."""
        found = []
        for calendar in calendars:
            with self._talking():
                items = calendar.remote.search(start=start, end=end, event=True, expand=True)
            for item in items:
                occurrence = self._occurrence(item.get_icalendar_component(), calendar.ref)
                if occurrence is not None and occurrence.end > start and occurrence.start < end:
                    found.append(occurrence)
        return sorted(found, key=lambda o: (o.start, o.summary, o.uid))

    def _occurrence(self, component: Any, ref: CalendarRef) -> Occurrence | None:
        try:
            return from_component(component, ref, self.zone)
        except ValueError as exc:  # icalendar: no DTSTART, or an invalid time
            log.warning("skipping an unreadable event in calendar %s: %s", ref.name, exc)
            return None

    # -- writing ---------------------------------------------------------------------------

    def create(self, calendar: Calendar, event: NewEvent) -> Occurrence:
        import icalendar

        component = icalendar.Event.new(
            summary=event.summary,
            start=event.start,
            end=event.end,
            location=event.location or None,
            description=event.description or None,
        )
        document = icalendar.Calendar.new(prodid=PRODID, subcomponents=[component])
        with self._talking():
            calendar.remote.add_event(document, no_overwrite=True)
        return from_component(component, calendar.ref, self.zone)

    def move(self, uid: str, start_text: str, end_text: str | None) -> Occurrence:
        """Move the event `uid` (a recurring one as a whole series); without an end it keeps
        its duration."""
        calendar, event = self._find(uid)
        with event.edit_icalendar_component() as component:
            all_day = not isinstance(component.start, datetime)
            duration: timedelta = component.end - component.start
            start = when.moment(start_text, all_day=all_day, zone=self.zone, field="start")
            end = start + duration
            if end_text is not None:
                end = when.moment(end_text, all_day=all_day, zone=self.zone, field="end")
            if end <= start:
                raise CalendarError("end must be after start")
            for name in ("DTSTART", "DTEND", "DURATION"):
                component.pop(name, None)
            component.start, component.end = start, end
            moved = from_component(component, calendar.ref, self.zone)
        with self._talking():
            event.save()
        return moved

    def delete(self, uid: str) -> CalendarRef:
        calendar, event = self._find(uid)
        with self._talking():
            event.delete()
        return calendar.ref

    def _find(self, uid: str) -> tuple[Calendar, Any]:
        from caldav.lib.error import NotFoundError

        calendars = self.calendars()
        for calendar in calendars:
            with self._talking():
                try:
                    return calendar, calendar.remote.get_event_by_uid(uid)
                except NotFoundError:
                    continue
        raise CalendarError(f"no event with uid {uid!r} in calendars {_listing(calendars)}")

    # -- errors ----------------------------------------------------------------------------

    @contextmanager
    def _talking(self) -> Iterator[None]:
        """Turn the library's and the network's errors into a CalendarError."""
        from caldav.lib.error import AuthorizationError, DAVError

        try:
            yield
        except AuthorizationError as exc:
            raise CalendarError(
                f"the CalDAV server at {self._shown_url} refused user {self._username!r} "
                f"(HTTP {exc.status or 401} {exc.reason}): check username and password"
            ) from None
        except DAVError as exc:
            raise CalendarError(
                f"the CalDAV server at {self._shown_url} answered {type(exc).__name__} "
                f"(HTTP {exc.status or '?'} {exc.reason})"
            ) from None
        except OSError as exc:
            raise CalendarError(
                f"cannot reach the CalDAV server at {self._shown_url}: {_root_cause(exc)}"
            ) from None


def _name(remote: Any) -> str:
    """A calendar's display name, or the last segment of its URL when it has none."""
    name = remote.get_display_name()
    return str(name) if name else str(remote.url).rstrip("/").rsplit("/", 1)[-1]


def _root_cause(error: BaseException) -> str:
    """The innermost error (`ConnectionRefusedError: [Errno 111] Connection refused`): the
    HTTP library's wrappers around it repeat the URL and add object reprs."""
    while (inner := error.__cause__ or error.__context__) is not None:
        error = inner
    return f"{type(error).__name__}: {error}"


def _listing(calendars: Sequence[Calendar]) -> str:
    return ", ".join(repr(c.ref.name) for c in calendars) or "none"


def _without_userinfo(url: str) -> str:
    """The URL as shown in messages: credentials written into it are left out."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=host))
