"""A trigger's validity and its due times.

Times are stored and compared in UTC; a cron expression is read in the trigger's `time_zone`
(croniter on aware datetimes, so a daily 09:00 stays 09:00 local across a DST change) and its
occurrences converted to UTC. An interval is anchored on `start_at` (`create_schedule` fills
it in as creation + interval), so its occurrences never drift however late a firing runs.

After a downtime several occurrences may have passed. By default the action fires once for
all of them, with the latest as its due time, then continues at the next future one; with
`catch_up` it fires once per missed occurrence, in turn. croniter (with dateutil under it) is
loaded by the first cron trigger, not with the Mind.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mind.events.action_views import TriggerKind, TriggerView
from mind.scheduler.errors import InvalidTrigger


def check_trigger(trigger: TriggerView, min_interval: float) -> None:
    """Raise InvalidTrigger, saying what to change, unless `trigger` can be scheduled."""
    _zone(trigger.time_zone)
    match trigger.kind:
        case TriggerKind.AT:
            if trigger.at is None:
                raise InvalidTrigger("a trigger at a time needs `at`")
            _aware("at", trigger.at)
        case TriggerKind.INTERVAL:
            if trigger.every_seconds < min_interval:
                raise InvalidTrigger(
                    f"an interval of {trigger.every_seconds} s is below the shortest allowed, "
                    f"{min_interval:g} s ([scheduler] min_interval)"
                )
            if trigger.start_at is not None:
                _aware("start_at", trigger.start_at)
        case TriggerKind.CRON:
            _check_cron(trigger.cron)
        case TriggerKind.OBSERVATION:
            _check_pattern(trigger.match)
        case TriggerKind.MEMORY:
            if not trigger.memory_key:
                raise InvalidTrigger("a memory condition needs the key of the entry it watches")
            _check_pattern(trigger.match)


def first_due(trigger: TriggerView, now: datetime) -> datetime | None:
    """When a new action with `trigger` first fires; None for a condition."""
    match trigger.kind:
        case TriggerKind.AT:
            assert trigger.at is not None
            return trigger.at.astimezone(UTC)
        case TriggerKind.INTERVAL:
            start = trigger.start_at or now + _every(trigger)
            return start.astimezone(UTC) if start >= now else _interval_after(trigger, now)
        case TriggerKind.CRON:
            return _cron_after(trigger, now)
    return None


def due_now(trigger: TriggerView, scheduled: datetime, now: datetime, catch_up: bool) -> datetime:
    """The due time of the firing to claim now, for an action scheduled at `scheduled` (≤ now):
    the oldest missed occurrence with `catch_up`, else the latest one (one firing for all)."""
    if catch_up or trigger.kind == TriggerKind.AT:
        return scheduled
    match trigger.kind:
        case TriggerKind.INTERVAL:
            latest = _interval_at_or_before(trigger, now)
        case TriggerKind.CRON:
            latest = _cron_at_or_before(trigger, now)
        case _:
            return scheduled
    return max(scheduled, latest)


def next_due(
    trigger: TriggerView, previous_due: datetime, now: datetime, catch_up: bool
) -> datetime | None:
    """When the action fires again after the firing due at `previous_due`; None: never (a
    one-time trigger, a condition). With `catch_up` the occurrence right after `previous_due`
    (perhaps still in the past: the next missed one); without, the first after `now`."""
    after = previous_due if catch_up else max(previous_due, now)
    match trigger.kind:
        case TriggerKind.INTERVAL:
            return _interval_after(trigger, after)
        case TriggerKind.CRON:
            return _cron_after(trigger, after)
    return None


def zone_of(trigger: TriggerView) -> ZoneInfo:
    return _zone(trigger.time_zone)


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidTrigger(
            f"unknown time zone {name!r}: use an IANA name like 'Europe/Paris'"
        ) from exc


def _aware(field: str, moment: datetime) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidTrigger(
            f"`{field}` {moment.isoformat()} has no UTC offset: write it with one "
            "(e.g. 2026-12-24T09:00:00+01:00)"
        )


def _check_cron(expression: str) -> None:
    from croniter import croniter

    fields = expression.split()
    if len(fields) != 5 or not croniter.is_valid(expression):
        raise InvalidTrigger(
            f"{expression!r} is not a five-field cron expression "
            "(minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5')"
        )


def _check_pattern(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise InvalidTrigger(f"{pattern!r} is not a valid regular expression: {exc}") from exc


def _every(trigger: TriggerView) -> timedelta:
    return timedelta(seconds=trigger.every_seconds)


def _anchor(trigger: TriggerView) -> datetime:
    assert trigger.start_at is not None, "create_schedule anchors every interval"
    return trigger.start_at.astimezone(UTC)


def _interval_after(trigger: TriggerView, moment: datetime) -> datetime:
    """The first occurrence strictly after `moment`."""
    start, every = _anchor(trigger), _every(trigger)
    if moment < start:
        return start
    return start + every * ((moment - start) // every + 1)


def _interval_at_or_before(trigger: TriggerView, moment: datetime) -> datetime:
    start, every = _anchor(trigger), _every(trigger)
    return start + every * max(0, (moment - start) // every)


def _cron_after(trigger: TriggerView, moment: datetime) -> datetime:
    from croniter import croniter

    local = moment.astimezone(zone_of(trigger))
    found: datetime = croniter(trigger.cron, local).get_next(datetime)
    return found.astimezone(UTC)


def _cron_at_or_before(trigger: TriggerView, moment: datetime) -> datetime:
    # Occurrences fall on whole minutes: one second later, the previous one is at or before.
    from croniter import croniter

    local = (moment + timedelta(seconds=1)).astimezone(zone_of(trigger))
    found: datetime = croniter(trigger.cron, local).get_prev(datetime)
    return found.astimezone(UTC)
