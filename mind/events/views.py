"""Typed views: what durable events carry and what snapshot and history reads return.

Each view mirrors one `tobe.v1` message field for field, under the same names (the servicer
converts with one explicit function per view, `mind.wire.convert`). Each also has an
explicit JSON form, the payload its durable event keeps in the outbox (`to_payload`,
`from_payload`): keys are the field names; enumerations are the store's lowercase words
("running", "transparent", "tool"; "" for none); timestamps are ISO-8601 strings in UTC ("" for
none). Payloads are replayed long after they were written, so `from_payload` reads every
payload ever written in this form, including those that lack the keys named where they are read
(a message's keys of other roles, raw tool content, an approval's decision text).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from mind.events.image_views import ImageRefView as ImageRefView
from mind.events.quote_views import ForwardedItemView, QuoteView
from mind.events.widget_views import WidgetCardView
from mind.tools.authorizer import Decision
from mind.tools.base import DetailMode, Effect

Payload = dict[str, Any]


class MessageRole(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    NOTE = "note"


class RunState(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


class ToolStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


def _iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else ""


def _moment(text: str) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _required_moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _word(value: StrEnum | None) -> str:
    return value.value if value is not None else ""


@dataclass(frozen=True)
class ToolCallRef:
    id: str
    name: str


@dataclass(frozen=True)
class MemoryChangedView:
    """A memory entry written or deleted; the text is read with ListMemory."""

    key: str
    deleted: bool
    size_bytes: int
    run_id: str

    def to_payload(self) -> Payload:
        return {
            "key": self.key,
            "deleted": self.deleted,
            "size_bytes": self.size_bytes,
            "run_id": self.run_id,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> MemoryChangedView:
        return cls(payload["key"], payload["deleted"], payload["size_bytes"], payload["run_id"])


@dataclass(frozen=True)
class MessageView:
    id: int
    conversation_key: str
    role: MessageRole
    text: str
    run_id: str
    created_at: datetime
    # The mode frozen on the run that wrote it; None for messages no run admitted (user
    # messages, notes).
    admitted_mode: DetailMode | None
    thinking: str = ""
    tool_calls: tuple[ToolCallRef, ...] = ()
    tool_call_id: str = ""
    result_summary: str = ""
    idempotency_key: str = ""
    is_error: bool = False
    images: tuple[ImageRefView, ...] = ()
    posted_by: str = ""
    redacted: bool = False
    # A widget message's card (posted_by "widget").
    widget: WidgetCardView | None = None
    # A person's message: the message it quotes with what the quote shows; a forwarded record.
    reply_to: int = 0
    quote: QuoteView | None = None
    forwarded: tuple[ForwardedItemView, ...] = ()

    def to_payload(self) -> Payload:
        return {
            "id": self.id,
            "conversation_key": self.conversation_key,
            "role": self.role.value,
            "text": self.text,
            "run_id": self.run_id,
            "created_at": _iso(self.created_at),
            "admitted_mode": _word(self.admitted_mode),
            "thinking": self.thinking,
            "tool_calls": [{"id": call.id, "name": call.name} for call in self.tool_calls],
            "tool_call_id": self.tool_call_id,
            "result_summary": self.result_summary,
            "idempotency_key": self.idempotency_key,
            "is_error": self.is_error,
            "images": [image.to_payload() for image in self.images],
            "posted_by": self.posted_by,
            "redacted": self.redacted,
            "widget": self.widget.to_payload() if self.widget is not None else None,
            "reply_to": self.reply_to,
            "quote": self.quote.to_payload() if self.quote is not None else None,
            "forwarded": [item.to_payload() for item in self.forwarded],
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> MessageView:
        admitted = payload["admitted_mode"]
        return cls(
            id=payload["id"],
            conversation_key=payload["conversation_key"],
            role=MessageRole(payload["role"]),
            text=payload["text"],
            run_id=payload["run_id"],
            created_at=_required_moment(payload["created_at"]),
            admitted_mode=DetailMode(admitted) if admitted else None,
            # Payloads may name only the keys of their role (and `thinking` only in transparent
            # mode).
            thinking=payload.get("thinking", ""),
            tool_calls=tuple(
                ToolCallRef(id=call["id"], name=call["name"])
                for call in payload.get("tool_calls", [])
            ),
            tool_call_id=payload.get("tool_call_id", ""),
            result_summary=payload.get("result_summary", ""),
            idempotency_key=payload.get("idempotency_key", ""),
            is_error=payload.get("is_error", False),
            images=tuple(ImageRefView.from_payload(image) for image in payload.get("images", [])),
            posted_by=payload.get("posted_by", ""),
            redacted=payload.get("redacted", False),
            widget=WidgetCardView.from_payload(widget)
            if (widget := payload.get("widget"))
            else None,
            reply_to=payload.get("reply_to", 0),
            quote=QuoteView.from_payload(quote) if (quote := payload.get("quote")) else None,
            forwarded=tuple(
                ForwardedItemView.from_payload(i) for i in payload.get("forwarded", [])
            ),
        )


@dataclass(frozen=True)
class ToolView:
    """The display projection of one tool call, rendered in `shown_mode`."""

    tool_call_id: str
    conversation_key: str
    run_id: str
    tool: str
    admitted_mode: DetailMode
    shown_mode: DetailMode
    arguments_summary: str
    status: ToolStatus
    result_summary: str
    admitted_at: datetime
    finished_at: datetime | None
    hand_id: str
    projection_version: int
    # Raw arguments and result: empty unless `shown_mode` is transparent.
    arguments_json: str = ""
    result_text: str = ""

    def to_payload(self) -> Payload:
        return {
            "tool_call_id": self.tool_call_id,
            "conversation_key": self.conversation_key,
            "run_id": self.run_id,
            "tool": self.tool,
            "admitted_mode": self.admitted_mode.value,
            "shown_mode": self.shown_mode.value,
            "arguments_summary": self.arguments_summary,
            "status": self.status.value,
            "result_summary": self.result_summary,
            "admitted_at": _iso(self.admitted_at),
            "finished_at": _iso(self.finished_at),
            "hand_id": self.hand_id,
            "projection_version": self.projection_version,
            "arguments_json": self.arguments_json,
            "result_text": self.result_text,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> ToolView:
        return cls(
            tool_call_id=payload["tool_call_id"],
            conversation_key=payload["conversation_key"],
            run_id=payload["run_id"],
            tool=payload["tool"],
            admitted_mode=DetailMode(payload["admitted_mode"]),
            shown_mode=DetailMode(payload["shown_mode"]),
            arguments_summary=payload["arguments_summary"],
            status=ToolStatus(payload["status"]),
            result_summary=payload["result_summary"],
            admitted_at=_required_moment(payload["admitted_at"]),
            finished_at=_moment(payload["finished_at"]),
            hand_id=payload["hand_id"],
            projection_version=payload["projection_version"],
            # Payloads may carry the raw keys only when shown transparent.
            arguments_json=payload.get("arguments_json", ""),
            result_text=payload.get("result_text", ""),
        )


@dataclass(frozen=True)
class RunView:
    id: str
    conversation_key: str
    state: RunState
    reason: str
    admitted_mode: DetailMode
    started_at: datetime
    finished_at: datetime | None
    trigger: str

    def to_payload(self) -> Payload:
        return {
            "id": self.id,
            "conversation_key": self.conversation_key,
            "state": self.state.value,
            "reason": self.reason,
            "admitted_mode": self.admitted_mode.value,
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "trigger": self.trigger,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> RunView:
        return cls(
            id=payload["id"],
            conversation_key=payload["conversation_key"],
            state=RunState(payload["state"]),
            reason=payload["reason"],
            admitted_mode=DetailMode(payload["admitted_mode"]),
            started_at=_required_moment(payload["started_at"]),
            finished_at=_moment(payload["finished_at"]),
            trigger=payload["trigger"],
        )


@dataclass(frozen=True)
class QueuedView:
    """A user message waiting behind a run: steering it, or as a follow-up (no `run_id`)."""

    run_id: str
    steer: bool
    text: str
    idempotency_key: str
    input_id: int

    def to_payload(self) -> Payload:
        return {
            "run_id": self.run_id,
            "steer": self.steer,
            "text": self.text,
            "idempotency_key": self.idempotency_key,
            "input_id": self.input_id,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> QueuedView:
        return cls(
            run_id=payload["run_id"],
            steer=payload["steer"],
            text=payload["text"],
            idempotency_key=payload["idempotency_key"],
            input_id=payload["input_id"],
        )


class CompactionTrigger(StrEnum):
    BUDGET = "budget"
    REQUESTED = "requested"
    OVERFLOW = "overflow"


@dataclass(frozen=True)
class CompactionView:
    """A committed compaction: the summary's generation and what it covers and saved."""

    generation: int
    through_message_id: int
    messages_summarised: int
    tokens_before: int
    tokens_after: int
    trigger: CompactionTrigger
    summary_calls: int
    run_id: str

    def to_payload(self) -> Payload:
        return {
            "generation": self.generation,
            "through_message_id": self.through_message_id,
            "messages_summarised": self.messages_summarised,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "trigger": self.trigger.value,
            "summary_calls": self.summary_calls,
            "run_id": self.run_id,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> CompactionView:
        return cls(
            generation=payload["generation"],
            through_message_id=payload["through_message_id"],
            messages_summarised=payload["messages_summarised"],
            tokens_before=payload["tokens_before"],
            tokens_after=payload["tokens_after"],
            trigger=CompactionTrigger(payload["trigger"]),
            summary_calls=payload["summary_calls"],
            run_id=payload["run_id"],
        )


@dataclass(frozen=True)
class ConversationView:
    key: str
    title: str
    owner: str
    members: tuple[str, ...]
    created_at: datetime
    last_event_id: int
    profile: str = ""
    active_hand: str = ""
    kind: str = "chat"
    archived: bool = False
    # A branch's origin: the conversation and message it was branched at ("" and 0: none).
    branched_from_key: str = ""
    branched_from_message_id: int = 0

    def to_payload(self) -> Payload:
        return {
            "key": self.key,
            "title": self.title,
            "owner": self.owner,
            "members": list(self.members),
            "created_at": _iso(self.created_at),
            "last_event_id": self.last_event_id,
            "profile": self.profile,
            "active_hand": self.active_hand,
            "kind": self.kind,
            "archived": self.archived,
            "branched_from_key": self.branched_from_key,
            "branched_from_message_id": self.branched_from_message_id,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> ConversationView:
        return cls(
            key=payload["key"],
            title=payload["title"],
            owner=payload["owner"],
            members=tuple(payload["members"]),
            created_at=_required_moment(payload["created_at"]),
            last_event_id=payload["last_event_id"],
            profile=payload.get("profile", ""),
            active_hand=payload.get("active_hand", ""),
            kind=payload.get("kind", "chat"),
            archived=payload.get("archived", False),
            branched_from_key=payload.get("branched_from_key", ""),
            branched_from_message_id=payload.get("branched_from_message_id", 0),
        )


@dataclass(frozen=True)
class ApprovalView:
    """An approval request as people see it: `decision_text` in every mode, raw
    `arguments_json` only for calls admitted transparent."""

    id: str
    conversation_key: str
    run_id: str
    tool_call_id: str
    tool: str
    effect: Effect
    hand_id: str
    arguments_summary: str
    arguments_json: str
    arguments_digest: str
    # None while pending.
    decision: Decision | None
    requested_at: datetime
    expires_at: datetime
    reason: str
    decision_text: str
    # What started the run that made the call; "" for a person's message.
    origin: str = ""
    # The parent's `delegate` call whose child asks ("" when no child does).
    delegate_call_id: str = ""

    def to_payload(self) -> Payload:
        return {
            "id": self.id,
            "conversation_key": self.conversation_key,
            "run_id": self.run_id,
            "tool_call_id": self.tool_call_id,
            "tool": self.tool,
            "effect": self.effect.value,
            "hand_id": self.hand_id,
            "arguments_summary": self.arguments_summary,
            "arguments_json": self.arguments_json,
            "arguments_digest": self.arguments_digest,
            "decision": _word(self.decision),
            "requested_at": _iso(self.requested_at),
            "expires_at": _iso(self.expires_at),
            "reason": self.reason,
            "decision_text": self.decision_text,
            "origin": self.origin,
            "delegate_call_id": self.delegate_call_id,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> ApprovalView:
        decision = payload["decision"]
        return cls(
            id=payload["id"],
            conversation_key=payload["conversation_key"],
            run_id=payload["run_id"],
            tool_call_id=payload["tool_call_id"],
            tool=payload["tool"],
            effect=Effect(payload["effect"]),
            hand_id=payload["hand_id"],
            arguments_summary=payload["arguments_summary"],
            arguments_json=payload["arguments_json"],
            arguments_digest=payload["arguments_digest"],
            decision=Decision(decision) if decision else None,
            requested_at=_required_moment(payload["requested_at"]),
            expires_at=_required_moment(payload["expires_at"]),
            reason=payload["reason"],
            # Absent from requests made before the Mind kept it.
            decision_text=payload.get("decision_text", ""),
            # Absent from requests made before the Mind kept it.
            origin=payload.get("origin", ""),
            delegate_call_id=payload.get("delegate_call_id", ""),
        )


@dataclass(frozen=True)
class CredentialRevokedView:
    """A credential's revocation: gateways close the connections that use it."""

    credential_id: str
    principal: str

    def to_payload(self) -> Payload:
        return {"credential_id": self.credential_id, "principal": self.principal}

    @classmethod
    def from_payload(cls, payload: Payload) -> CredentialRevokedView:
        return cls(credential_id=payload["credential_id"], principal=payload["principal"])
