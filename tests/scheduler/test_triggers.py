"""Due times of each trigger kind, in the owner's zone, across downtimes and DST; validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from mind.events.action_views import TriggerKind, TriggerView
from mind.scheduler.errors import InvalidTrigger
from mind.scheduler.triggers import check_trigger, due_now, first_due, next_due

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
PARIS = ZoneInfo("Europe/Paris")


def interval(every: int, start: datetime | None = None) -> TriggerView:
    return TriggerView(TriggerKind.INTERVAL, "UTC", every_seconds=every, start_at=start)


def cron(expression: str, zone: str = "Europe/Paris") -> TriggerView:
    return TriggerView(TriggerKind.CRON, zone, cron=expression)


def test_an_at_trigger_is_due_at_its_instant_in_utc_and_never_again() -> None:
    at = datetime(2026, 12, 24, 9, 0, tzinfo=PARIS)
    trigger = TriggerView(TriggerKind.AT, "Europe/Paris", at=at)
    assert first_due(trigger, NOW) == datetime(2026, 12, 24, 8, 0, tzinfo=UTC)
    assert next_due(trigger, at, at, catch_up=False) is None


def test_an_interval_is_anchored_on_its_start_and_does_not_drift_with_late_firings() -> None:
    trigger = interval(3600, NOW)
    assert first_due(trigger, NOW) == NOW
    late = NOW + timedelta(minutes=7)
    assert next_due(trigger, NOW, late, catch_up=False) == NOW + timedelta(hours=1)


def test_an_interval_started_in_the_past_is_first_due_at_its_next_occurrence() -> None:
    trigger = interval(3600, NOW - timedelta(hours=5, minutes=30))
    assert first_due(trigger, NOW) == NOW + timedelta(minutes=30)


def test_missed_interval_occurrences_fire_once_as_the_latest_then_continue_in_the_future() -> None:
    trigger = interval(3600, NOW)
    back = NOW + timedelta(hours=5, minutes=10)
    due = due_now(trigger, NOW, back, catch_up=False)
    assert due == NOW + timedelta(hours=5)
    assert next_due(trigger, due, back, catch_up=False) == NOW + timedelta(hours=6)


def test_with_catch_up_each_missed_interval_occurrence_fires_in_turn() -> None:
    trigger = interval(3600, NOW)
    back = NOW + timedelta(hours=2, minutes=10)
    dues = []
    scheduled: datetime | None = NOW
    while scheduled is not None and scheduled <= back:
        due = due_now(trigger, scheduled, back, catch_up=True)
        dues.append(due)
        scheduled = next_due(trigger, due, back, catch_up=True)
    assert dues == [NOW, NOW + timedelta(hours=1), NOW + timedelta(hours=2)]
    assert scheduled == NOW + timedelta(hours=3)


def test_cron_is_read_in_the_trigger_zone_and_stored_in_utc() -> None:
    # 09:00 in Paris in winter is 08:00 UTC.
    assert first_due(cron("0 9 * * *"), NOW) == datetime(2026, 12, 4, 8, 0, tzinfo=UTC)


def test_a_daily_cron_stays_at_nine_local_across_the_spring_dst_change() -> None:
    before = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
    trigger = cron("0 9 * * *")
    first = first_due(trigger, before)
    second = next_due(trigger, first, first, catch_up=False) if first else None
    assert first == datetime(2026, 3, 29, 7, 0, tzinfo=UTC)  # CEST: UTC+2, the day of the change
    assert second == datetime(2026, 3, 30, 7, 0, tzinfo=UTC)
    assert first.astimezone(PARIS).hour == 9
    before_change = next_due(trigger, datetime(2026, 3, 27, 8, 0, tzinfo=UTC), before, False)
    assert before_change == first


def test_a_daily_cron_stays_at_nine_local_across_the_autumn_dst_change() -> None:
    trigger = cron("0 9 * * *")
    first = first_due(trigger, datetime(2026, 10, 24, 12, 0, tzinfo=UTC))
    assert first == datetime(2026, 10, 25, 8, 0, tzinfo=UTC)  # CET again: UTC+1
    assert first.astimezone(PARIS).hour == 9


def test_a_cron_time_skipped_by_the_spring_change_fires_once_that_day() -> None:
    trigger = cron("30 2 * * *")
    first = first_due(trigger, datetime(2026, 3, 28, 12, 0, tzinfo=UTC))
    assert first is not None
    assert first.date() == datetime(2026, 3, 29).date()
    following = next_due(trigger, first, first, catch_up=False)
    assert following == datetime(2026, 3, 30, 0, 30, tzinfo=UTC)


def test_missed_cron_occurrences_fire_once_as_the_latest() -> None:
    trigger = cron("0 * * * *", "UTC")
    scheduled = datetime(2026, 12, 3, 6, 0, tzinfo=UTC)
    back = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)
    due = due_now(trigger, scheduled, back, catch_up=False)
    assert due == datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    assert next_due(trigger, due, back, False) == datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def test_conditions_have_no_due_time() -> None:
    trigger = TriggerView(TriggerKind.OBSERVATION, "UTC", adapter="ci", match="failed")
    assert first_due(trigger, NOW) is None


@pytest.mark.parametrize(
    ("trigger", "says"),
    [
        (TriggerView(TriggerKind.CRON, "Mars/Olympus", cron="0 9 * * *"), "unknown time zone"),
        (TriggerView(TriggerKind.AT, "UTC", at=datetime(2026, 12, 24, 9)), "no UTC offset"),
        (interval(30), "below the shortest allowed, 60 s"),
        (cron("0 25 * * *"), "not a five-field cron expression"),
        (cron("0 9 * * * *"), "not a five-field cron expression"),
        (TriggerView(TriggerKind.OBSERVATION, "UTC", match="build (fail"), "regular expression"),
        (TriggerView(TriggerKind.MEMORY, "UTC", match="x"), "needs the key"),
    ],
)
def test_an_invalid_trigger_is_refused_saying_what_to_change(
    trigger: TriggerView, says: str
) -> None:
    with pytest.raises(InvalidTrigger, match=says):
        check_trigger(trigger, min_interval=60)


def test_valid_triggers_pass() -> None:
    for trigger in (
        interval(60),
        cron("*/5 9-17 * * 1-5"),
        TriggerView(TriggerKind.AT, "UTC", at=NOW),
        TriggerView(TriggerKind.MEMORY, "UTC", memory_key="build", match="red|failed"),
    ):
        check_trigger(trigger, min_interval=60)
