"""The one datetime ↔ Timestamp conversion: UTC out, the instant kept, unset stays unset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from tobe.runtime.timestamps import from_timestamp, optional_moment, to_timestamp
from tobe.v1 import common_pb2


def test_a_moment_in_any_zone_comes_back_as_the_same_instant_in_utc() -> None:
    paris = datetime(2026, 9, 10, 16, 0, 30, 250_000, tzinfo=timezone(timedelta(hours=2)))
    back = from_timestamp(to_timestamp(paris))
    assert back == paris
    assert back.tzinfo is UTC


def test_no_moment_leaves_the_field_unset() -> None:
    run = common_pb2.Run(id="run_1", started_at=to_timestamp(datetime.now(UTC)))
    assert to_timestamp(None) is None
    assert optional_moment(run, "finished_at") is None
    assert optional_moment(run, "started_at") is not None
