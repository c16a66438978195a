"""datetime ↔ protobuf `Timestamp`: the one conversion every process uses.

Datetimes are timezone-aware and UTC on the way out; a naive one is taken as UTC, as
`Timestamp.FromDatetime` does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp


@overload
def to_timestamp(moment: datetime) -> Timestamp: ...


@overload
def to_timestamp(moment: None) -> None: ...


def to_timestamp(moment: datetime | None) -> Timestamp | None:
    """The field value for `moment`; None (the field left unset) for None."""
    if moment is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def from_timestamp(stamp: Timestamp) -> datetime:
    return stamp.ToDatetime(tzinfo=UTC)


def optional_moment(message: Message, field: str) -> datetime | None:
    """The time in `message.<field>`, or None when the field is unset."""
    if not message.HasField(field):
        return None
    stamp: Timestamp = getattr(message, field)
    return from_timestamp(stamp)
