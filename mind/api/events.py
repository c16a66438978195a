"""Outbox rows and ephemeral events → `tobe.v1.Event`.

A durable event's payload is read back into its view (`mind.events.views`), whatever release
of the Mind wrote it, and converted like any other view (`mind.wire.convert`).
"""

from __future__ import annotations

from mind.events.action_views import PendingActionView, ScheduledActionView
from mind.events.bus import EphemeralEvent
from mind.events.views import (
    ApprovalView,
    CompactionView,
    ConversationView,
    CredentialRevokedView,
    MemoryChangedView,
    MessageView,
    QueuedView,
    RunView,
    ToolView,
)
from mind.events.widget_views import WidgetChangedView
from mind.sealing.forms import SEALED, open_event
from mind.sealing.keyring import KeyRing
from mind.store.models import OutboxEvent
from mind.wire import convert, convert_actions, convert_widgets
from mind.wire.convert_children import child_to_proto
from tobe.v1 import events_pb2


def durable_event(row: OutboxEvent, keyring: KeyRing | None = None) -> events_pb2.Event:
    """The stored event; its payload field is the one its `type` names (none for a type this
    release does not know). A sealed run's payload opens while its key exists, and reads as
    its replacement afterwards (`mind.sealing.forms.open_event`); without a ring, in its
    redacted form. A run sealed before this process started is looked up once, here on the
    caller's thread (`KeyRing.state`)."""
    event = events_pb2.Event(
        durable_id=row.id, conversation_key=row.conversation_key, audience=list(row.audience)
    )
    event.time.FromDatetime(row.created_at)
    payload = row.payload
    if SEALED in payload:
        payload = open_event(row.type, payload, keyring or KeyRing())
    match row.type:
        case "message_appended":
            event.message_appended.CopyFrom(
                convert.message_to_proto(MessageView.from_payload(payload))
            )
        case "run_changed":
            event.run_changed.CopyFrom(convert.run_to_proto(RunView.from_payload(payload)))
        case "tool_changed":
            event.tool_changed.CopyFrom(convert.tool_to_proto(ToolView.from_payload(payload)))
        case "approval_changed":
            event.approval_changed.CopyFrom(
                convert.approval_to_proto(ApprovalView.from_payload(payload))
            )
        case "conversation_created":
            event.conversation_created.CopyFrom(
                convert.conversation_to_proto(ConversationView.from_payload(payload))
            )
        case "credential_revoked":
            event.credential_revoked.CopyFrom(
                convert.revoked_to_proto(CredentialRevokedView.from_payload(payload))
            )
        case "message_queued":
            event.message_queued.CopyFrom(convert.queued_to_proto(QueuedView.from_payload(payload)))
        case "memory_changed":
            event.memory_changed.CopyFrom(
                convert.memory_changed_to_proto(MemoryChangedView.from_payload(payload))
            )
        case "action_changed":
            event.action_changed.CopyFrom(
                convert_actions.pending_action_to_proto(PendingActionView.from_payload(payload))
            )
        case "schedule_changed":
            event.schedule_changed.CopyFrom(
                convert_actions.scheduled_action_to_proto(ScheduledActionView.from_payload(payload))
            )
        case "conversation_changed":
            event.conversation_changed.CopyFrom(
                convert.conversation_to_proto(ConversationView.from_payload(payload))
            )
        case "widget_changed":
            event.widget_changed.CopyFrom(
                convert_widgets.widget_changed_to_proto(WidgetChangedView.from_payload(payload))
            )
        case "context_compacted":
            event.context_compacted.CopyFrom(
                convert.compaction_to_proto(CompactionView.from_payload(payload))
            )
    return event


def ephemeral_event(item: EphemeralEvent) -> events_pb2.Event:
    event = events_pb2.Event(conversation_key=item.conversation_key, audience=list(item.audience))
    event.time.FromDatetime(item.time)
    if item.kind == "tool_progress":
        event.tool_progress.CopyFrom(
            events_pb2.ToolProgress(
                run_id=item.run_id,
                tool_call_id=item.tool_call_id,
                message=item.text,
                fraction=item.fraction,
                child=child_to_proto(item.child) if item.child is not None else None,
            )
        )
    else:
        getattr(event, item.kind).CopyFrom(
            events_pb2.TextDelta(run_id=item.run_id, step=item.step, text=item.text)
        )
    return event
