"""Clock: scheduled signals (actor `signal`) from config schedules and agent-set timers.

Schedules repeat (`every_seconds` after start, or daily `at` HH:MM in `timezone`); timers fire
once and are kept in `data/timers.json`, so a timer due while Awareness was down fires (marked
`late`) when the clock starts again.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from awareness.adapter import Action, ActionFailed, Adapter, AdapterContext

TIMERS = "timers.json"  # in data/


@dataclass
class Due:
    when: datetime
    key: str


class ClockAdapter(Adapter):
    description = "Scheduled signals: repeating schedules from config and one-shot timers."
    auto_start = True

    def __init__(self, context: AdapterContext) -> None:
        super().__init__(context)
        config = context.config
        try:
            self.zone = ZoneInfo(config["timezone"])
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("config field timezone is not a known IANA time zone") from None
        self.trust = config["trust"]
        self.schedules = {s["name"]: s for s in config["schedules"]}
        self._next: dict[str, datetime] = {}
        self._changed = asyncio.Event()

    def read_actions(self) -> list[Action]:
        return [
            Action("now", "Current time in UTC and in the configured time zone.", self._now),
            Action("list", "Schedules and pending timers with their next fire time.", self._list),
        ]

    def write_actions(self) -> list[Action]:
        return [
            Action(
                "set_timer",
                "Set a one-shot timer: a signal after `in_seconds` or at `at` (ISO 8601).",
                self._set_timer,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["note"],
                    "oneOf": [{"required": ["in_seconds"]}, {"required": ["at"]}],
                    "properties": {
                        "note": {"type": "string", "maxLength": 2000},
                        "in_seconds": {"type": "number", "minimum": 0},
                        "at": {"type": "string", "format": "date-time"},
                    },
                },
            ),
            Action(
                "cancel_timer",
                "Cancel a pending timer by id.",
                self._cancel_timer,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["timer_id"],
                    "properties": {"timer_id": {"type": "string"}},
                },
            ),
        ]

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        now = datetime.now(UTC)
        self._next = {name: self._following(s, now) for name, s in self.schedules.items()}

    async def run(self) -> None:
        """The supervised loop (`awareness.supervisor`): an error here restarts the adapter."""
        while True:
            due = self._earliest()
            if due is not None and due.when <= datetime.now(UTC):
                self._fire(due)
                continue
            delay = None if due is None else (due.when - datetime.now(UTC)).total_seconds()
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), delay)

    def _earliest(self) -> Due | None:
        candidates = [Due(when, f"schedule:{name}") for name, when in self._next.items()]
        candidates += [
            Due(datetime.fromisoformat(t["due"]), f"timer:{tid}")
            for tid, t in self._load_timers().items()
        ]
        return min(candidates, key=lambda d: d.when, default=None)

    def _fire(self, due: Due) -> None:
        now = datetime.now(UTC)
        kind, name = due.key.split(":", 1)
        late = (now - due.when).total_seconds() > 60
        if kind == "schedule":
            schedule = self.schedules[name]
            self._next[name] = self._following(schedule, now)
            content = {"kind": "schedule", "name": name, "note": schedule.get("note", "")}
            trust = schedule.get("trust", self.trust)
        else:
            timers = self._load_timers()
            timer = timers.pop(name)
            self._save_timers(timers)
            content = {"kind": "timer", "timer_id": name, "note": timer["note"]}
            trust = self.trust
        content |= {"scheduled_for": due.when.isoformat(), "fired_at": now.isoformat()}
        if late:
            content["late"] = True
        self.context.emit(actor="signal", trust=trust, content=content)

    def _following(self, schedule: dict[str, Any], after: datetime) -> datetime:
        if "every_seconds" in schedule:
            return after + timedelta(seconds=schedule["every_seconds"])
        hour, minute = map(int, schedule["at"].split(":"))
        local = after.astimezone(self.zone)
        candidate = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if candidate <= local:
            candidate += timedelta(days=1)
        return candidate.astimezone(UTC)

    # -- timers ---------------------------------------------------------------------------

    def _load_timers(self) -> dict[str, dict[str, str]]:
        timers: dict[str, dict[str, str]] = self.context.load_json(TIMERS) or {}
        return timers

    def _save_timers(self, timers: dict[str, dict[str, str]]) -> None:
        self.context.save_json(TIMERS, timers)
        self._changed.set()

    async def _set_timer(self, args: dict[str, Any]) -> dict[str, Any]:
        if "in_seconds" in args:
            due = datetime.now(UTC) + timedelta(seconds=args["in_seconds"])
        else:
            try:
                due = datetime.fromisoformat(args["at"])
            except ValueError:
                raise ActionFailed("at must be an ISO 8601 date-time") from None
            if due.tzinfo is None:
                due = due.replace(tzinfo=self.zone)
            due = due.astimezone(UTC)
        timer_id = uuid.uuid4().hex[:12]
        timers = self._load_timers()
        timers[timer_id] = {"due": due.isoformat(), "note": args["note"]}
        self._save_timers(timers)
        return {"timer_id": timer_id, "due": due.isoformat()}

    async def _cancel_timer(self, args: dict[str, Any]) -> dict[str, Any]:
        timers = self._load_timers()
        if timers.pop(args["timer_id"], None) is None:
            raise ActionFailed(f"no pending timer {args['timer_id']!r}")
        self._save_timers(timers)
        return {"cancelled": args["timer_id"]}

    async def _now(self, args: dict[str, Any]) -> dict[str, Any]:
        now = datetime.now(UTC)
        return {
            "utc": now.isoformat(),
            "local": now.astimezone(self.zone).isoformat(),
            "timezone": str(self.zone),
        }

    async def _list(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "schedules": [
                {**s, "next": self._next[n].isoformat() if n in self._next else None}
                for n, s in self.schedules.items()
            ],
            "timers": [{"timer_id": tid, **t} for tid, t in self._load_timers().items()],
        }


ADAPTER = ClockAdapter
