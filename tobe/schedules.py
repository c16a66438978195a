"""Scheduled actions in people's words, for every client that shows them (`tobe chat`,
`tobe admin`): the trigger as a phrase and times in the trigger's zone, the owner's."""

from __future__ import annotations

from datetime import UTC
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from google.protobuf.timestamp_pb2 import Timestamp

from tobe.v1 import common_pb2


def zone(trigger: common_pb2.Trigger) -> ZoneInfo:
    try:
        return ZoneInfo(trigger.time_zone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def local_time(stamp: Timestamp, trigger: common_pb2.Trigger) -> str:
    """`2026-12-24 09:00 Europe/Paris`: the instant in the trigger's zone."""
    moment = stamp.ToDatetime(tzinfo=UTC).astimezone(zone(trigger))
    return f"{moment:%Y-%m-%d %H:%M} {zone(trigger).key}"


def describe_trigger(trigger: common_pb2.Trigger) -> str:
    """When it fires, as a phrase: "every 2 h", "at 2026-12-24 09:00 Europe/Paris",
    "on cron '0 9 * * 1-5' (Europe/Paris)", "when ci reports build matching /failed/"."""
    match trigger.WhichOneof("kind"):
        case "at":
            return f"at {local_time(trigger.at, trigger)}"
        case "interval":
            return f"every {_duration(trigger.interval.every_seconds)}"
        case "cron":
            return f"on cron '{trigger.cron.expression}' ({zone(trigger).key})"
        case "observation":
            condition = trigger.observation
            source = condition.adapter or "any adapter"
            what = f" {condition.kind}" if condition.kind else ""
            pattern = f" matching /{condition.match}/" if condition.match else ""
            return f"when {source} reports{what or ' anything'}{pattern}"
        case "memory":
            pattern = f" to match /{trigger.memory.match}/" if trigger.memory.match else ""
            return f"when memory '{trigger.memory.key}' changes{pattern}"
    return "never (no trigger)"


def state_word(state: common_pb2.ScheduleState.ValueType) -> str:
    return common_pb2.ScheduleState.Name(state).removeprefix("SCHEDULE_STATE_").lower()


def outcome_word(action: common_pb2.ScheduledAction) -> str:
    """The latest firing's outcome, "" when it never fired."""
    if not action.HasField("last_firing"):
        return ""
    name = common_pb2.FiringOutcome.Name(action.last_firing.outcome)
    return name.removeprefix("FIRING_OUTCOME_").lower()


def next_time(action: common_pb2.ScheduledAction) -> str:
    if not action.HasField("next_fire_at"):
        return ""
    return local_time(action.next_fire_at, action.trigger)


def _duration(seconds: int) -> str:
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"
