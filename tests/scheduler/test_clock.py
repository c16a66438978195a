"""The file clock: time moved by writing a file, the system time when there is none, and one
log line for a malformed instant."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mind.scheduler.clock import FileClock, SystemClock, clock_from
from tobe.config import SchedulerSettings


def test_the_file_clock_reads_the_instant_written_on_every_call(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    clock = FileClock(path)
    path.write_text("2026-12-24T09:00:00+01:00\n")
    assert clock.now() == datetime(2026, 12, 24, 8, 0, tzinfo=UTC)
    path.write_text("2026-12-24T10:00:00")  # no offset: UTC
    assert clock.now() == datetime(2026, 12, 24, 10, 0, tzinfo=UTC)


def test_a_missing_or_empty_clock_file_is_the_system_time(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    clock = FileClock(path)
    assert abs(clock.now() - datetime.now(UTC)) < timedelta(seconds=5)
    path.write_text("  \n")
    assert abs(clock.now() - datetime.now(UTC)) < timedelta(seconds=5)


def test_a_malformed_instant_is_logged_once_and_the_system_time_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "clock"
    path.write_text("next tuesday")
    clock = FileClock(path)
    with caplog.at_level(logging.ERROR, logger="mind.scheduler.clock"):
        first, second = clock.now(), clock.now()
    assert abs(second - datetime.now(UTC)) < timedelta(seconds=5) and first <= second
    (record,) = caplog.records
    assert "not an ISO-8601 instant" in record.getMessage()


def test_the_settings_choose_the_clock(tmp_path: Path) -> None:
    assert isinstance(clock_from(SchedulerSettings()), SystemClock)
    assert isinstance(clock_from(SchedulerSettings(clock_file=tmp_path / "c")), FileClock)
