"""Every field of each view reaches its `tobe.v1` message and comes back, and every field of
the message is carried by the view or named here as not carried, with the reason.

A field renamed or added on either side fails here instead of going missing on the wire.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

import pytest
from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

from mind.events.quote_views import ForwardedItemView, QuoteView
from mind.events.views import (
    ApprovalView,
    CompactionTrigger,
    CompactionView,
    ConversationView,
    CredentialRevokedView,
    ImageRefView,
    MemoryChangedView,
    MessageRole,
    MessageView,
    QueuedView,
    RunState,
    RunView,
    ToolCallRef,
    ToolStatus,
    ToolView,
)
from mind.events.widget_views import WidgetCardView, WidgetChangedView
from mind.memory.store import MemoryEntryView
from mind.tools.authorizer import Decision
from mind.tools.base import DetailMode, Effect
from mind.wire import convert, convert_widgets
from tobe.v1 import common_pb2, events_pb2

START = datetime(2026, 12, 3, 10, 11, 12, 345678, tzinfo=UTC)
END = START + timedelta(seconds=3)


@dataclass(frozen=True)
class Mapping:
    proto: type[ProtoMessage]
    to_proto: Callable[[Any], ProtoMessage]
    from_proto: Callable[[Any], Any]
    # A view with every field set to something other than its empty value (whether or not one
    # message would have them all).
    full: Any
    # The same view with every field that may be empty left empty.
    sparse: Any
    # Fields of the proto message the view does not carry, each with the reason.
    not_carried: dict[str, str] = dataclasses.field(default_factory=dict)


FULL_MESSAGE = MessageView(
    id=7,
    conversation_key="p_x",
    role=MessageRole.ASSISTANT,
    text="hello",
    run_id="run_1",
    created_at=START,
    admitted_mode=DetailMode.TRANSPARENT,
    thinking="hmm",
    tool_calls=(ToolCallRef(id="call_1", name="current_time"), ToolCallRef(id="call_2", name="x")),
    tool_call_id="call_0",
    result_summary="ok, 3 bytes",
    idempotency_key="k1",
    is_error=True,
    images=(ImageRefView(digest="ab" * 32, media_type="image/png", size_bytes=2048),),
    posted_by="welcome",
    redacted=True,
    widget=WidgetCardView("w_1", "trip", "Rome", "Three nights", "ab" * 32, 4),
    reply_to=5,
    quote=QuoteView(5, "alice", "see you", has_images=True),
    forwarded=(
        ForwardedItemView(
            "bob", "look", (ImageRefView(digest="cd" * 32, media_type="image/gif", size_bytes=9),)
        ),
    ),
)
FULL_TOOL = ToolView(
    tool_call_id="call_1",
    conversation_key="p_x",
    run_id="run_1",
    tool="current_time",
    admitted_mode=DetailMode.TRANSPARENT,
    shown_mode=DetailMode.TRANSPARENT,
    arguments_summary="timezone=<3 chars>",
    status=ToolStatus.SUCCEEDED,
    result_summary="ok, 20 bytes",
    admitted_at=START,
    finished_at=END,
    hand_id="laptop",
    projection_version=1,
    arguments_json='{"timezone":"UTC"}',
    result_text='{"utc":"..."}',
)
FULL_RUN = RunView(
    id="run_1",
    conversation_key="p_x",
    state=RunState.FAILED,
    reason="provider error",
    admitted_mode=DetailMode.TRANSPARENT,
    started_at=START,
    finished_at=END,
    trigger="user",
)
FULL_APPROVAL = ApprovalView(
    id="ap_1",
    conversation_key="p_x",
    run_id="run_1",
    tool_call_id="call_1",
    tool="laptop__run_command",
    effect=Effect.EXTERNAL_SIDE_EFFECT,
    hand_id="laptop",
    arguments_summary="command=<2 chars>",
    arguments_json='{"command":"ls"}',
    arguments_digest="ab" * 32,
    decision=Decision.APPROVE_CONVERSATION,
    requested_at=START,
    expires_at=END,
    reason="external side effect",
    decision_text="run ls",
    origin="a medium-trust observation from email@work (INBOX)",
    delegate_call_id="call_parent",
)

MAPPINGS = {
    "Message": Mapping(
        common_pb2.Message,
        convert.message_to_proto,
        convert.message_from_proto,
        FULL_MESSAGE,
        MessageView(
            id=8,
            conversation_key="p_x",
            role=MessageRole.USER,
            text="hi",
            run_id="",
            created_at=START,
            admitted_mode=None,
        ),
    ),
    "ToolProjection": Mapping(
        common_pb2.ToolProjection,
        convert.tool_to_proto,
        convert.tool_from_proto,
        FULL_TOOL,
        dataclasses.replace(
            FULL_TOOL,
            status=ToolStatus.RUNNING,
            finished_at=None,
            hand_id="",
            result_summary="",
            arguments_json="",
            result_text="",
        ),
    ),
    "Run": Mapping(
        common_pb2.Run,
        convert.run_to_proto,
        convert.run_from_proto,
        FULL_RUN,
        dataclasses.replace(FULL_RUN, state=RunState.RUNNING, reason="", finished_at=None),
    ),
    "QueuedMessage": Mapping(
        events_pb2.QueuedMessage,
        convert.queued_to_proto,
        convert.queued_from_proto,
        QueuedView(run_id="run_1", steer=True, text="stop", idempotency_key="k2", input_id=4),
        QueuedView(run_id="", steer=False, text="later", idempotency_key="k3", input_id=5),
    ),
    "Conversation": Mapping(
        common_pb2.Conversation,
        convert.conversation_to_proto,
        convert.conversation_from_proto,
        ConversationView(
            key="g_team",
            title="Team",
            owner="alice",
            members=("bob", "carol"),
            created_at=START,
            last_event_id=42,
            profile="coach",
            active_hand="laptop",
            archived=True,
            branched_from_key="g_origin",
            branched_from_message_id=7,
        ),
        ConversationView(
            key="p_x", title="", owner="alice", members=(), created_at=START, last_event_id=0
        ),
    ),
    "Approval": Mapping(
        common_pb2.Approval,
        convert.approval_to_proto,
        convert.approval_from_proto,
        FULL_APPROVAL,
        dataclasses.replace(
            FULL_APPROVAL,
            effect=Effect.UNKNOWN,
            hand_id="",
            arguments_json="",
            decision=None,
            decision_text="",
        ),
    ),
    "ContextCompacted": Mapping(
        events_pb2.ContextCompacted,
        convert.compaction_to_proto,
        convert.compaction_from_proto,
        CompactionView(
            generation=2,
            through_message_id=48,
            messages_summarised=30,
            tokens_before=41_200,
            tokens_after=9_800,
            trigger=CompactionTrigger.BUDGET,
            summary_calls=2,
            run_id="run_1",
        ),
        CompactionView(
            generation=1,
            through_message_id=12,
            messages_summarised=10,
            tokens_before=5_000,
            tokens_after=900,
            trigger=CompactionTrigger.REQUESTED,
            summary_calls=1,
            run_id="",
        ),
    ),
    "MemoryChanged": Mapping(
        events_pb2.MemoryChanged,
        convert.memory_changed_to_proto,
        convert.memory_changed_from_proto,
        MemoryChangedView(key="diet", deleted=True, size_bytes=120, run_id="run_1"),
        MemoryChangedView(key="diet", deleted=False, size_bytes=0, run_id=""),
    ),
    "WidgetChanged": Mapping(
        events_pb2.WidgetChanged,
        convert_widgets.widget_changed_to_proto,
        convert_widgets.widget_changed_from_proto,
        WidgetChangedView(widget_id="w_1", revision=4, updated_at=START),
        WidgetChangedView(widget_id="w_2", revision=1, updated_at=START),
    ),
    "MemoryEntry": Mapping(
        common_pb2.MemoryEntry,
        convert.memory_entry_to_proto,
        convert.memory_entry_from_proto,
        MemoryEntryView(key="diet", text="no peanuts", updated_at=START),
        MemoryEntryView(key="empty", text="", updated_at=START),
    ),
    "CredentialRevoked": Mapping(
        events_pb2.CredentialRevoked,
        convert.revoked_to_proto,
        convert.revoked_from_proto,
        CredentialRevokedView(credential_id="cred_1", principal="alice"),
        CredentialRevokedView(credential_id="cred_2", principal=""),
    ),
}


def _is_set(message: ProtoMessage, field: FieldDescriptor) -> bool:
    value = getattr(message, field.name)
    if field.is_repeated:
        return len(value) > 0
    if field.message_type is not None:
        return message.HasField(field.name)
    return bool(value != field.default_value)


@pytest.mark.parametrize("name", MAPPINGS)
def test_every_field_of_the_message_is_carried_by_its_view_or_named_as_not(name: str) -> None:
    mapping = MAPPINGS[name]
    carried = {field.name for field in dataclasses.fields(mapping.full)}
    in_proto = set(mapping.proto.DESCRIPTOR.fields_by_name)
    assert carried - in_proto == set(), "view fields the message lacks"
    assert in_proto - carried == set(mapping.not_carried), "message fields the view lacks"


@pytest.mark.parametrize("name", MAPPINGS)
def test_a_view_with_every_field_set_sets_every_carried_field_of_its_message(name: str) -> None:
    mapping = MAPPINGS[name]
    message = mapping.to_proto(mapping.full)
    unset = [
        field.name
        for field in message.DESCRIPTOR.fields
        if field.name not in mapping.not_carried and not _is_set(message, field)
    ]
    assert unset == []


@pytest.mark.parametrize("name", MAPPINGS)
@pytest.mark.parametrize("variant", ["full", "sparse"])
def test_a_view_comes_back_equal_from_its_message(name: str, variant: str) -> None:
    mapping = MAPPINGS[name]
    view = getattr(mapping, variant)
    wire = mapping.to_proto(view).SerializeToString()
    assert mapping.from_proto(mapping.proto.FromString(wire)) == view


def test_the_full_tool_call_ref_reaches_the_message() -> None:
    fields = {field.name for field in dataclasses.fields(ToolCallRef)}
    assert fields == set(common_pb2.ToolCallRef.DESCRIPTOR.fields_by_name)


ENUMS: list[tuple[dict[Any, int], type[Enum], EnumDescriptor]] = [
    (convert.MODES, DetailMode, common_pb2.DetailMode.DESCRIPTOR),
    (convert.ROLES, MessageRole, common_pb2.MessageRole.DESCRIPTOR),
    (convert.RUN_STATES, RunState, common_pb2.RunState.DESCRIPTOR),
    (convert.TOOL_STATUSES, ToolStatus, common_pb2.ToolStatus.DESCRIPTOR),
    (convert.EFFECTS, Effect, common_pb2.EffectClass.DESCRIPTOR),
    (convert.DECISIONS, Decision, common_pb2.ApprovalDecision.DESCRIPTOR),
    (convert.COMPACTION_TRIGGERS, CompactionTrigger, events_pb2.CompactionTrigger.DESCRIPTOR),
]


@pytest.mark.parametrize(
    ("table", "domain", "proto"), ENUMS, ids=[domain.__name__ for _, domain, _ in ENUMS]
)
def test_each_domain_word_has_one_contract_value_and_back(
    table: dict[Any, int], domain: type[Enum], proto: EnumDescriptor
) -> None:
    assert set(domain) <= set(table)
    assert len(set(table.values())) == len(table), "two words share a contract value"
    named = {value.number for value in proto.values if not value.name.endswith("_UNSPECIFIED")}
    assert named <= set(table.values()), "contract values no word maps to"
