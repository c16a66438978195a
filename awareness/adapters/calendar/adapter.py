"""Calendar: a CalDAV account's upcoming events become observations; the agent reads and edits.

Each occurrence of an event (recurring events expanded) is observed once, `lead_time` minutes
before it starts (at once when first seen later than that, never once started), as
`kind: "calendar_event"` with the calendar as its source. The server is polled every
`poll_interval` seconds; a failed poll fails the adapter, and the engine connects again after
its backoff. The `caldav` library blocks: every request runs in a worker thread, one at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from awareness.adapter import Action, ActionFailed, Adapter, AdapterContext, Effect

from . import actions
from .account import Account
from .errors import CalendarError
from .reminders import Reminders

T = TypeVar("T")


class CalendarAdapter(Adapter):
    description = (
        "A CalDAV calendar: events about to start become observations; "
        "events can be listed, created, moved and deleted."
    )
    auto_start = False

    def __init__(self, context: AdapterContext) -> None:
        super().__init__(context)
        self.config = context.config
        self.poll_interval = float(self.config["poll_interval"])
        self.look_ahead = timedelta(hours=self.config["look_ahead"])
        self.reminders = Reminders(context, timedelta(minutes=self.config["lead_time"]))
        self._account: Account | None = None
        self._requests = asyncio.Lock()

    def read_actions(self) -> list[Action]:
        return [
            Action(
                "events",
                "Events between start and end (default: the next look_ahead hours), "
                "recurring events expanded, sorted by start.",
                self._events,
                actions.EVENTS_ARGS,
            ),
            Action("calendars", "The calendars this adapter reads and writes.", self._calendars),
        ]

    def write_actions(self) -> list[Action]:
        return [
            Action(
                "create_event",
                "Create an event (end or duration; all-day events take dates); returns it "
                "with its uid.",
                self._create,
                actions.CREATE_ARGS,
                effect=Effect.EXTERNAL_SIDE_EFFECT,
            ),
            Action(
                "move_event",
                "Move an event (a recurring one as a whole series) to a new start; without "
                "an end it keeps its duration.",
                self._move,
                actions.MOVE_ARGS,
                effect=Effect.EXTERNAL_SIDE_EFFECT,
            ),
            Action(
                "delete_event",
                "Delete an event.",
                self._delete,
                actions.DELETE_ARGS,
                effect=Effect.EXTERNAL_SIDE_EFFECT,
            ),
        ]

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        account = Account(
            url=_url(self.config["url"]),
            username=self.config["username"],
            password=self.config["password"],
            watched=self.config["calendars"],
            zone=_zone(self.config["time_zone"]),
        )
        try:
            await asyncio.to_thread(account.connect)
        except BaseException:
            account.close()
            raise
        self._account = account

    async def run(self) -> None:
        while True:
            await self._observe_due()
            await asyncio.sleep(self.poll_interval)

    async def stop(self) -> None:
        account, self._account = self._account, None
        if account is not None:
            account.close()

    async def _observe_due(self) -> None:
        now = datetime.now(UTC)
        start, end = self.reminders.window(now)
        found = await self._use(lambda a: a.occurrences(a.calendars(), start, end))
        zone = self._connected().zone
        for occurrence in self.reminders.due(found, now):
            self.context.emit(
                actor="signal",
                trust=self.config["trust"],
                content=occurrence.observed(zone, now),
                source_key=occurrence.calendar.url,
                source_title=occurrence.calendar.name,
            )
            self.reminders.mark(occurrence)

    async def _use(self, work: Callable[[Account], T]) -> T:
        """Run `work` in a worker thread, after any request still running."""
        account = self._connected()
        async with self._requests:
            return await asyncio.to_thread(work, account)

    def _connected(self) -> Account:
        if self._account is None:
            raise CalendarError(
                "the calendar adapter is not connected to its server "
                "(list_adapters shows its state and last error)"
            )
        return self._account

    # -- actions ---------------------------------------------------------------------------

    async def _act(self, work: Callable[[Account], Any]) -> Any:
        try:
            return await self._use(work)
        except CalendarError as exc:
            raise ActionFailed(str(exc)) from None

    async def _events(self, args: dict[str, Any]) -> Any:
        now = datetime.now(UTC)
        return await self._act(lambda a: actions.events(a, args, now, self.look_ahead))

    async def _calendars(self, args: dict[str, Any]) -> Any:
        return await self._act(actions.calendars)

    async def _create(self, args: dict[str, Any]) -> Any:
        return await self._act(lambda a: actions.create(a, args).shown(a.zone))

    async def _move(self, args: dict[str, Any]) -> Any:
        def move(account: Account) -> dict[str, Any]:
            moved = account.move(args["uid"], args["start"], args.get("end"))
            return moved.shown(account.zone)

        return await self._act(move)

    async def _delete(self, args: dict[str, Any]) -> Any:
        def delete(account: Account) -> dict[str, Any]:
            calendar = account.delete(args["uid"])
            return {"deleted": args["uid"], "calendar": calendar.name}

        return await self._act(delete)


def _url(url: str) -> str:
    if urlsplit(url).scheme not in ("http", "https"):
        raise CalendarError(
            "config field url must be the CalDAV server's http(s) URL, "
            "e.g. https://dav.example.com/ (a Radicale server: http://127.0.0.1:5232/)"
        )
    return url


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CalendarError(
            f"config field time_zone must be an IANA time zone like Europe/Berlin, not {name!r}"
        ) from None


ADAPTER = CalendarAdapter
