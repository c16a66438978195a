"""Views (`mind.events.views`) ↔ `tobe.v1` messages: one explicit pair of functions per view.

`*_to_proto` builds what the Mind sends; `*_from_proto` is its inverse, so that every field of
a view is proved to reach the wire and come back (`tests/contracts/test_view_contracts.py`).
A field renamed or dropped on either side fails there instead of going missing on the wire.
"""

from __future__ import annotations

from mind.credentials.pairing import IssuedCode
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
from mind.events.widget_views import WidgetCardView
from mind.memory.store import MemoryEntryView
from mind.tools.authorizer import Decision
from mind.tools.base import DetailMode, Effect
from tobe.runtime.timestamps import from_timestamp, optional_moment, to_timestamp
from tobe.v1 import common_pb2, events_pb2

MODES: dict[DetailMode | None, common_pb2.DetailMode.ValueType] = {
    None: common_pb2.DETAIL_MODE_UNSPECIFIED,
    DetailMode.SUMMARY: common_pb2.DETAIL_MODE_SUMMARY,
    DetailMode.TRANSPARENT: common_pb2.DETAIL_MODE_TRANSPARENT,
}
ROLES: dict[MessageRole, common_pb2.MessageRole.ValueType] = {
    MessageRole.USER: common_pb2.MESSAGE_ROLE_USER,
    MessageRole.ASSISTANT: common_pb2.MESSAGE_ROLE_ASSISTANT,
    MessageRole.TOOL: common_pb2.MESSAGE_ROLE_TOOL,
    MessageRole.NOTE: common_pb2.MESSAGE_ROLE_NOTE,
}
RUN_STATES: dict[RunState, common_pb2.RunState.ValueType] = {
    RunState.RUNNING: common_pb2.RUN_STATE_RUNNING,
    RunState.COMPLETED: common_pb2.RUN_STATE_COMPLETED,
    RunState.FAILED: common_pb2.RUN_STATE_FAILED,
    RunState.CANCELLED: common_pb2.RUN_STATE_CANCELLED,
    RunState.INTERRUPTED: common_pb2.RUN_STATE_INTERRUPTED,
}
TOOL_STATUSES: dict[ToolStatus, common_pb2.ToolStatus.ValueType] = {
    ToolStatus.RUNNING: common_pb2.TOOL_STATUS_RUNNING,
    ToolStatus.SUCCEEDED: common_pb2.TOOL_STATUS_SUCCEEDED,
    ToolStatus.FAILED: common_pb2.TOOL_STATUS_FAILED,
    ToolStatus.DENIED: common_pb2.TOOL_STATUS_DENIED,
    ToolStatus.SKIPPED: common_pb2.TOOL_STATUS_SKIPPED,
    ToolStatus.CANCELLED: common_pb2.TOOL_STATUS_CANCELLED,
}
EFFECTS: dict[Effect, common_pb2.EffectClass.ValueType] = {
    Effect.READ_ONLY: common_pb2.EFFECT_CLASS_READ_ONLY,
    Effect.WORKSPACE_WRITE: common_pb2.EFFECT_CLASS_WORKSPACE_WRITE,
    Effect.EXTERNAL_SIDE_EFFECT: common_pb2.EFFECT_CLASS_EXTERNAL_SIDE_EFFECT,
    # The contract's unspecified effect is the undeclared one (treated as the riskiest).
    Effect.UNKNOWN: common_pb2.EFFECT_CLASS_UNSPECIFIED,
}
DECISIONS: dict[Decision | None, common_pb2.ApprovalDecision.ValueType] = {
    None: common_pb2.APPROVAL_DECISION_UNSPECIFIED,
    Decision.APPROVE_ONCE: common_pb2.APPROVAL_DECISION_APPROVE_ONCE,
    Decision.APPROVE_CONVERSATION: common_pb2.APPROVAL_DECISION_APPROVE_CONVERSATION,
    Decision.DENY: common_pb2.APPROVAL_DECISION_DENY,
    Decision.EXPIRED: common_pb2.APPROVAL_DECISION_EXPIRED,
}
_MODES_BACK = {value: mode for mode, value in MODES.items()}
_ROLES_BACK = {value: role for role, value in ROLES.items()}
_RUN_STATES_BACK = {value: state for state, value in RUN_STATES.items()}
_TOOL_STATUSES_BACK = {value: status for status, value in TOOL_STATUSES.items()}
_EFFECTS_BACK = {value: effect for effect, value in EFFECTS.items()}
_DECISIONS_BACK = {value: decision for decision, value in DECISIONS.items()}


def detail_mode(mode: common_pb2.DetailMode.ValueType) -> DetailMode:
    """A request's detail mode; unspecified means summary (the safe default)."""
    return _MODES_BACK.get(mode) or DetailMode.SUMMARY


def _admitted(mode: common_pb2.DetailMode.ValueType) -> DetailMode:
    admitted = _MODES_BACK[mode]
    if admitted is None:
        raise ValueError("an admitted mode cannot be unspecified")
    return admitted


def message_to_proto(view: MessageView) -> common_pb2.Message:
    return common_pb2.Message(
        id=view.id,
        conversation_key=view.conversation_key,
        role=ROLES[view.role],
        text=view.text,
        thinking=view.thinking,
        tool_calls=[common_pb2.ToolCallRef(id=call.id, name=call.name) for call in view.tool_calls],
        tool_call_id=view.tool_call_id,
        run_id=view.run_id,
        created_at=to_timestamp(view.created_at),
        admitted_mode=MODES[view.admitted_mode],
        result_summary=view.result_summary,
        idempotency_key=view.idempotency_key,
        is_error=view.is_error,
        images=[image_to_proto(image) for image in view.images],
        posted_by=view.posted_by,
        redacted=view.redacted,
        widget=widget_card_to_proto(view.widget) if view.widget is not None else None,
        reply_to=view.reply_to,
        forwarded=[
            common_pb2.ForwardedItem(
                speaker=item.speaker,
                text=item.text,
                images=[image_to_proto(image) for image in item.images],
            )
            for item in view.forwarded
        ],
        quote=common_pb2.Quote(
            message_id=view.quote.message_id,
            speaker=view.quote.speaker,
            text=view.quote.text,
            has_images=view.quote.has_images,
        )
        if view.quote is not None
        else None,
    )


def widget_card_to_proto(view: WidgetCardView) -> common_pb2.WidgetCard:
    return common_pb2.WidgetCard(
        id=view.id,
        type=view.type,
        title=view.title,
        summary=view.summary,
        cover=view.cover,
        revision=view.revision,
    )


def image_to_proto(view: ImageRefView) -> common_pb2.ImageRef:
    return common_pb2.ImageRef(
        digest=view.digest, media_type=view.media_type, size_bytes=view.size_bytes
    )


def image_from_proto(message: common_pb2.ImageRef) -> ImageRefView:
    return ImageRefView(message.digest, message.media_type, message.size_bytes)


def memory_changed_to_proto(view: MemoryChangedView) -> events_pb2.MemoryChanged:
    return events_pb2.MemoryChanged(
        key=view.key, deleted=view.deleted, size_bytes=view.size_bytes, run_id=view.run_id
    )


def memory_changed_from_proto(message: events_pb2.MemoryChanged) -> MemoryChangedView:
    return MemoryChangedView(message.key, message.deleted, message.size_bytes, message.run_id)


def memory_entry_to_proto(view: MemoryEntryView) -> common_pb2.MemoryEntry:
    return common_pb2.MemoryEntry(
        key=view.key, text=view.text, updated_at=to_timestamp(view.updated_at)
    )


def memory_entry_from_proto(message: common_pb2.MemoryEntry) -> MemoryEntryView:
    return MemoryEntryView(message.key, message.text, from_timestamp(message.updated_at))


def message_from_proto(message: common_pb2.Message) -> MessageView:
    return MessageView(
        id=message.id,
        conversation_key=message.conversation_key,
        role=_ROLES_BACK[message.role],
        text=message.text,
        thinking=message.thinking,
        tool_calls=tuple(ToolCallRef(id=call.id, name=call.name) for call in message.tool_calls),
        tool_call_id=message.tool_call_id,
        run_id=message.run_id,
        created_at=from_timestamp(message.created_at),
        admitted_mode=_MODES_BACK[message.admitted_mode],
        result_summary=message.result_summary,
        idempotency_key=message.idempotency_key,
        is_error=message.is_error,
        images=tuple(image_from_proto(image) for image in message.images),
        posted_by=message.posted_by,
        redacted=message.redacted,
        widget=WidgetCardView(
            message.widget.id,
            message.widget.type,
            message.widget.title,
            message.widget.summary,
            message.widget.cover,
            message.widget.revision,
        )
        if message.HasField("widget")
        else None,
        reply_to=message.reply_to,
        quote=QuoteView(
            message.quote.message_id,
            message.quote.speaker,
            message.quote.text,
            message.quote.has_images,
        )
        if message.HasField("quote")
        else None,
        forwarded=tuple(
            ForwardedItemView(
                item.speaker, item.text, tuple(image_from_proto(image) for image in item.images)
            )
            for item in message.forwarded
        ),
    )


def tool_to_proto(view: ToolView) -> common_pb2.ToolProjection:
    return common_pb2.ToolProjection(
        tool_call_id=view.tool_call_id,
        conversation_key=view.conversation_key,
        run_id=view.run_id,
        tool=view.tool,
        admitted_mode=MODES[view.admitted_mode],
        shown_mode=MODES[view.shown_mode],
        arguments_summary=view.arguments_summary,
        arguments_json=view.arguments_json,
        status=TOOL_STATUSES[view.status],
        result_summary=view.result_summary,
        result_text=view.result_text,
        admitted_at=to_timestamp(view.admitted_at),
        finished_at=to_timestamp(view.finished_at),
        hand_id=view.hand_id,
        projection_version=view.projection_version,
    )


def tool_from_proto(message: common_pb2.ToolProjection) -> ToolView:
    return ToolView(
        tool_call_id=message.tool_call_id,
        conversation_key=message.conversation_key,
        run_id=message.run_id,
        tool=message.tool,
        admitted_mode=_admitted(message.admitted_mode),
        shown_mode=_admitted(message.shown_mode),
        arguments_summary=message.arguments_summary,
        arguments_json=message.arguments_json,
        status=_TOOL_STATUSES_BACK[message.status],
        result_summary=message.result_summary,
        result_text=message.result_text,
        admitted_at=from_timestamp(message.admitted_at),
        finished_at=optional_moment(message, "finished_at"),
        hand_id=message.hand_id,
        projection_version=message.projection_version,
    )


def run_to_proto(view: RunView) -> common_pb2.Run:
    return common_pb2.Run(
        id=view.id,
        conversation_key=view.conversation_key,
        state=RUN_STATES[view.state],
        reason=view.reason,
        admitted_mode=MODES[view.admitted_mode],
        started_at=to_timestamp(view.started_at),
        finished_at=to_timestamp(view.finished_at),
        trigger=view.trigger,
    )


def run_from_proto(message: common_pb2.Run) -> RunView:
    return RunView(
        id=message.id,
        conversation_key=message.conversation_key,
        state=_RUN_STATES_BACK[message.state],
        reason=message.reason,
        admitted_mode=_admitted(message.admitted_mode),
        started_at=from_timestamp(message.started_at),
        finished_at=optional_moment(message, "finished_at"),
        trigger=message.trigger,
    )


def queued_to_proto(view: QueuedView) -> events_pb2.QueuedMessage:
    return events_pb2.QueuedMessage(
        run_id=view.run_id,
        steer=view.steer,
        text=view.text,
        idempotency_key=view.idempotency_key,
        input_id=view.input_id,
    )


def queued_from_proto(message: events_pb2.QueuedMessage) -> QueuedView:
    return QueuedView(
        run_id=message.run_id,
        steer=message.steer,
        text=message.text,
        idempotency_key=message.idempotency_key,
        input_id=message.input_id,
    )


COMPACTION_TRIGGERS = {
    CompactionTrigger.BUDGET: events_pb2.COMPACTION_TRIGGER_BUDGET,
    CompactionTrigger.REQUESTED: events_pb2.COMPACTION_TRIGGER_REQUESTED,
    CompactionTrigger.OVERFLOW: events_pb2.COMPACTION_TRIGGER_OVERFLOW,
}
_COMPACTION_TRIGGERS_BACK = {wire: word for word, wire in COMPACTION_TRIGGERS.items()}


def compaction_to_proto(view: CompactionView) -> events_pb2.ContextCompacted:
    return events_pb2.ContextCompacted(
        generation=view.generation,
        through_message_id=view.through_message_id,
        messages_summarised=view.messages_summarised,
        tokens_before=view.tokens_before,
        tokens_after=view.tokens_after,
        trigger=COMPACTION_TRIGGERS[view.trigger],
        summary_calls=view.summary_calls,
        run_id=view.run_id,
    )


def compaction_from_proto(message: events_pb2.ContextCompacted) -> CompactionView:
    return CompactionView(
        generation=message.generation,
        through_message_id=message.through_message_id,
        messages_summarised=message.messages_summarised,
        tokens_before=message.tokens_before,
        tokens_after=message.tokens_after,
        trigger=_COMPACTION_TRIGGERS_BACK[message.trigger],
        summary_calls=message.summary_calls,
        run_id=message.run_id,
    )


def conversation_to_proto(view: ConversationView) -> common_pb2.Conversation:
    return common_pb2.Conversation(
        key=view.key,
        title=view.title,
        owner=view.owner,
        members=list(view.members),
        created_at=to_timestamp(view.created_at),
        last_event_id=view.last_event_id,
        profile=view.profile,
        active_hand=view.active_hand,
        kind=view.kind,
        archived=view.archived,
        branched_from_key=view.branched_from_key,
        branched_from_message_id=view.branched_from_message_id,
    )


def conversation_from_proto(message: common_pb2.Conversation) -> ConversationView:
    return ConversationView(
        key=message.key,
        title=message.title,
        owner=message.owner,
        members=tuple(message.members),
        created_at=from_timestamp(message.created_at),
        last_event_id=message.last_event_id,
        profile=message.profile,
        active_hand=message.active_hand,
        kind=message.kind or "chat",
        archived=message.archived,
        branched_from_key=message.branched_from_key,
        branched_from_message_id=message.branched_from_message_id,
    )


def approval_to_proto(view: ApprovalView) -> common_pb2.Approval:
    return common_pb2.Approval(
        id=view.id,
        conversation_key=view.conversation_key,
        run_id=view.run_id,
        tool_call_id=view.tool_call_id,
        tool=view.tool,
        effect=EFFECTS[view.effect],
        hand_id=view.hand_id,
        arguments_summary=view.arguments_summary,
        arguments_json=view.arguments_json,
        arguments_digest=view.arguments_digest,
        decision=DECISIONS[view.decision],
        requested_at=to_timestamp(view.requested_at),
        expires_at=to_timestamp(view.expires_at),
        reason=view.reason,
        decision_text=view.decision_text,
        origin=view.origin,
        delegate_call_id=view.delegate_call_id,
    )


def approval_from_proto(message: common_pb2.Approval) -> ApprovalView:
    return ApprovalView(
        id=message.id,
        conversation_key=message.conversation_key,
        run_id=message.run_id,
        tool_call_id=message.tool_call_id,
        tool=message.tool,
        effect=_EFFECTS_BACK[message.effect],
        hand_id=message.hand_id,
        arguments_summary=message.arguments_summary,
        arguments_json=message.arguments_json,
        arguments_digest=message.arguments_digest,
        decision=_DECISIONS_BACK[message.decision],
        requested_at=from_timestamp(message.requested_at),
        expires_at=from_timestamp(message.expires_at),
        reason=message.reason,
        decision_text=message.decision_text,
        origin=message.origin,
        delegate_call_id=message.delegate_call_id,
    )


def revoked_to_proto(view: CredentialRevokedView) -> events_pb2.CredentialRevoked:
    return events_pb2.CredentialRevoked(credential_id=view.credential_id, principal=view.principal)


def revoked_from_proto(message: events_pb2.CredentialRevoked) -> CredentialRevokedView:
    return CredentialRevokedView(credential_id=message.credential_id, principal=message.principal)


def pairing_to_proto(issued: IssuedCode) -> common_pb2.PairingCode:
    """A new pairing code for the one who asked for it (the only place the code is sent)."""
    return common_pb2.PairingCode(
        code=issued.code, principal=issued.principal, expires_at=to_timestamp(issued.expires_at)
    )
