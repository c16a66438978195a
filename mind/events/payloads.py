"""Views of stored rows, rendered for one viewer's detail mode (`mind.events.views`).

One rendering serves the outbox (rendered in the mode frozen at admission, kept as the view's
payload) and the snapshot and history reads (rendered in the viewer's mode, never more
detailed than the admission). Rows are read by attribute, so ORM objects and the store's named
tuples of the same columns (`mind.store.statements`) both serve. Event `type` is the name of
the `Event.payload` field: message_appended, run_changed, tool_changed, approval_changed,
conversation_created, credential_revoked, message_queued, context_compacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from mind.events.quote_views import ForwardedItemView, QuoteView
from mind.events.views import (
    ApprovalView,
    ConversationView,
    ImageRefView,
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
from mind.tools.authorizer import Decision
from mind.tools.base import DetailMode, Effect


class MessageRow(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def conversation_key(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def run_id(self) -> str | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def payload(self) -> dict[str, Any] | None: ...


class ProjectionRow(Protocol):
    @property
    def tool_call_id(self) -> str: ...
    @property
    def conversation_key(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def admitted_mode(self) -> str: ...
    @property
    def arguments_summary(self) -> str: ...
    @property
    def arguments_projection(self) -> dict[str, Any] | None: ...
    @property
    def status(self) -> str: ...
    @property
    def result_summary(self) -> str: ...
    @property
    def result_projection(self) -> dict[str, Any] | None: ...
    @property
    def admitted_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime | None: ...
    @property
    def hand_id(self) -> str: ...
    @property
    def projection_version(self) -> int: ...


class RunRow(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def conversation_key(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def detail_mode(self) -> str: ...
    @property
    def started_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime | None: ...
    @property
    def trigger(self) -> str: ...


class InputRow(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def steer(self) -> bool: ...
    @property
    def text(self) -> str: ...
    @property
    def idempotency_key(self) -> str: ...


class ConversationRow(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def profile(self) -> str: ...
    @property
    def active_hand(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def archived(self) -> bool: ...
    @property
    def branched_from_key(self) -> str: ...
    @property
    def branched_from_message_id(self) -> int: ...


class ApprovalRow(Protocol):
    """A row of `approvals` or an `ApprovalRecord`."""

    @property
    def id(self) -> str: ...
    @property
    def conversation_key(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def effect(self) -> str: ...
    @property
    def hand_id(self) -> str: ...
    @property
    def arguments_summary(self) -> str: ...
    @property
    def arguments_digest(self) -> str: ...
    @property
    def decision(self) -> str | None: ...
    @property
    def requested_at(self) -> datetime: ...
    @property
    def expires_at(self) -> datetime: ...
    @property
    def reason(self) -> str: ...
    @property
    def decision_text(self) -> str: ...
    @property
    def origin(self) -> str: ...


def shown_mode(admitted: DetailMode, viewer: DetailMode) -> DetailMode:
    """The mode to render in: the viewer's, but never more detailed than the admission."""
    if admitted == DetailMode.TRANSPARENT and viewer == DetailMode.TRANSPARENT:
        return DetailMode.TRANSPARENT
    return DetailMode.SUMMARY


def message_view(row: MessageRow, viewer: DetailMode) -> MessageView:
    payload = row.payload or {}
    role = MessageRole(row.role)
    admitted = DetailMode(payload["detail_mode"]) if payload.get("detail_mode") else None
    transparent = admitted is not None and shown_mode(admitted, viewer) == DetailMode.TRANSPARENT
    assistant = role is MessageRole.ASSISTANT
    # A note carrying a background task's result is shown like that task's tool result.
    result = role is MessageRole.TOOL or (role is MessageRole.NOTE and "result_summary" in payload)
    summary: str = payload.get("result_summary", "") if result else ""
    return MessageView(
        id=row.id,
        conversation_key=row.conversation_key,
        role=role,
        text=summary if result and not transparent else row.text,
        run_id=row.run_id or "",
        created_at=row.created_at,
        admitted_mode=admitted,
        thinking=_thinking(payload) if assistant and transparent else "",
        tool_calls=_tool_calls(payload) if assistant else (),
        tool_call_id=payload.get("tool_call_id", "") if result else "",
        result_summary=summary,
        idempotency_key=payload.get("idempotency_key", "") if role is MessageRole.USER else "",
        is_error=result and bool(payload.get("is_error")),
        posted_by=payload.get("posted_by", "") if assistant else "",
        # A result's images are its raw content (a digest confirms a guessed image): a
        # summary view has their count in its summary only.
        images=()
        if result and not transparent
        else tuple(ImageRefView.from_payload(ref) for ref in payload.get("images", [])),
        redacted=bool(payload.get("redacted")),
        widget=WidgetCardView.from_payload(payload["widget"])
        if assistant and payload.get("widget")
        else None,
        reply_to=payload.get("reply_to") or 0,
        quote=QuoteView.from_payload(quote) if (quote := payload.get("quote")) else None,
        forwarded=tuple(ForwardedItemView.from_payload(i) for i in payload.get("forwarded", [])),
    )


def _thinking(payload: dict[str, Any]) -> str:
    return "\n\n".join(block.get("text", "") for block in payload.get("thinking", []))


def _tool_calls(payload: dict[str, Any]) -> tuple[ToolCallRef, ...]:
    return tuple(
        ToolCallRef(id=call["id"], name=call["name"]) for call in payload.get("tool_calls", [])
    )


def projection_view(row: ProjectionRow, viewer: DetailMode) -> ToolView:
    admitted = DetailMode(row.admitted_mode)
    shown = shown_mode(admitted, viewer)
    transparent = shown == DetailMode.TRANSPARENT
    return ToolView(
        tool_call_id=row.tool_call_id,
        conversation_key=row.conversation_key,
        run_id=row.run_id,
        tool=row.tool,
        admitted_mode=admitted,
        shown_mode=shown,
        arguments_summary=row.arguments_summary,
        status=ToolStatus(row.status),
        result_summary=row.result_summary,
        admitted_at=row.admitted_at,
        finished_at=row.finished_at,
        hand_id=row.hand_id,
        projection_version=row.projection_version,
        arguments_json=(
            (row.arguments_projection or {}).get("arguments_json", "") if transparent else ""
        ),
        result_text=(row.result_projection or {}).get("text", "") if transparent else "",
    )


def run_view(row: RunRow) -> RunView:
    return RunView(
        id=row.id,
        conversation_key=row.conversation_key,
        state=RunState(row.state),
        reason=row.reason,
        admitted_mode=DetailMode(row.detail_mode),
        started_at=row.started_at,
        finished_at=row.finished_at,
        trigger=row.trigger,
    )


def queued_view(row: InputRow, run_id: str) -> QueuedView:
    return QueuedView(
        run_id=run_id,
        steer=row.steer,
        text=row.text,
        idempotency_key=row.idempotency_key,
        input_id=row.id,
    )


def conversation_view(
    row: ConversationRow, members: Sequence[str], last_event_id: int = 0
) -> ConversationView:
    return ConversationView(
        key=row.key,
        title=row.title,
        owner=row.owner,
        members=tuple(members),
        created_at=row.created_at,
        last_event_id=last_event_id,
        profile=row.profile,
        active_hand=row.active_hand,
        kind=row.kind,
        archived=bool(row.archived),
        branched_from_key=row.branched_from_key or "",
        branched_from_message_id=row.branched_from_message_id or 0,
    )


def approval_view(
    row: ApprovalRow, arguments_json: str = "", delegate_call_id: str = ""
) -> ApprovalView:
    """`arguments_json` only for calls admitted transparent; `decision_text` in every mode
    (a person can't decide on what they can't see); `delegate_call_id` when a child asks."""
    return ApprovalView(
        id=row.id,
        conversation_key=row.conversation_key,
        run_id=row.run_id,
        tool_call_id=row.tool_call_id,
        tool=row.tool,
        effect=Effect(row.effect),
        hand_id=row.hand_id,
        arguments_summary=row.arguments_summary,
        arguments_json=arguments_json,
        arguments_digest=row.arguments_digest,
        decision=Decision(row.decision) if row.decision else None,
        requested_at=row.requested_at,
        expires_at=row.expires_at,
        reason=row.reason,
        decision_text=row.decision_text,
        origin=row.origin,
        delegate_call_id=delegate_call_id,
    )
