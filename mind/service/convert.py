"""Domain views (plain dicts, see `mind.events.payloads`) → `tobe.v1` messages, and back."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message as ProtoMessage
from google.protobuf.timestamp_pb2 import Timestamp

from mind.events.bus import EphemeralEvent
from mind.store.models import OutboxEvent
from tobe.v1 import common_pb2, events_pb2

_PAYLOAD_TYPES: dict[str, type[ProtoMessage]] = {
    "message_appended": common_pb2.Message,
    "run_changed": common_pb2.Run,
    "tool_changed": common_pb2.ToolProjection,
    "approval_changed": common_pb2.Approval,
    "conversation_created": common_pb2.Conversation,
    "credential_revoked": events_pb2.CredentialRevoked,
    "message_queued": events_pb2.QueuedMessage,
}


def _enum_prefix(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper() + "_"


def _enum_value(field: FieldDescriptor, word: str) -> int:
    if not word:
        return 0
    enum = field.enum_type
    value = enum.values_by_name.get(_enum_prefix(enum.name) + word.upper())
    return value.number if value is not None else 0


def _timestamp(text: str) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(datetime.fromisoformat(text))
    return stamp


def fill(message: ProtoMessage, data: dict[str, Any]) -> ProtoMessage:
    """Set the fields of `message` named by `data`'s keys; unknown keys are ignored."""
    fields = message.DESCRIPTOR.fields_by_name
    for key, value in data.items():
        field = fields.get(key)
        if field is None or value is None or value == "":
            continue
        repeated = field.is_repeated
        if field.type == FieldDescriptor.TYPE_ENUM:
            setattr(message, key, _enum_value(field, value))
        elif field.message_type is not None and field.message_type.full_name == (
            "google.protobuf.Timestamp"
        ):
            getattr(message, key).CopyFrom(_timestamp(value))
        elif field.message_type is not None and repeated:
            container = getattr(message, key)
            for item in value:
                fill(container.add(), item)
        elif field.message_type is not None:
            fill(getattr(message, key), value)
        elif repeated:
            getattr(message, key).extend(value)
        else:
            setattr(message, key, value)
    return message


def to_proto(cls: type[ProtoMessage], data: dict[str, Any]) -> Any:
    message = cls()
    fill(message, data)
    return message


def durable_event(row: OutboxEvent) -> events_pb2.Event:
    event = events_pb2.Event(
        durable_id=row.id, conversation_key=row.conversation_key, audience=list(row.audience)
    )
    event.time.FromDatetime(row.created_at)
    payload_type = _PAYLOAD_TYPES.get(row.type)
    if payload_type is not None:
        fill(getattr(event, row.type), row.payload)
    return event


def ephemeral_event(item: EphemeralEvent) -> events_pb2.Event:
    event = events_pb2.Event(conversation_key=item.conversation_key, audience=list(item.audience))
    event.time.FromDatetime(item.time)
    if item.kind == "tool_progress":
        event.tool_progress.CopyFrom(
            events_pb2.ToolProgress(
                run_id=item.run_id, tool_call_id=item.tool_call_id, message=item.text,
                fraction=item.fraction,
            )
        )
    else:
        getattr(event, item.kind).CopyFrom(
            events_pb2.TextDelta(run_id=item.run_id, step=item.step, text=item.text)
        )
    return event


def mode_word(mode: int) -> str:
    """A request's DetailMode as the store's word; unspecified means summary."""
    return "transparent" if mode == common_pb2.DETAIL_MODE_TRANSPARENT else "summary"
