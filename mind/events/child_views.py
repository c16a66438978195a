"""A child run (`delegate`) as its parent's card shows it: the child's latest tool calls and
its latest text. Carries only what every detail mode shows (names, states, summaries), so it
travels to every viewer of the parent unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mind.events.views import ToolStatus

Payload = dict[str, Any]


@dataclass(frozen=True)
class ChildCallView:
    """One tool call of a child run."""

    tool_call_id: str
    tool: str
    status: ToolStatus
    arguments_summary: str
    result_summary: str

    def to_payload(self) -> Payload:
        return {
            "id": self.tool_call_id,
            "tool": self.tool,
            "status": self.status.value,
            "arguments": self.arguments_summary,
            "result": self.result_summary,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> ChildCallView:
        return cls(
            tool_call_id=payload["id"],
            tool=payload["tool"],
            status=ToolStatus(payload["status"]),
            arguments_summary=payload["arguments"],
            result_summary=payload["result"],
        )


@dataclass(frozen=True)
class ChildView:
    """The child of the parent's `delegate` call `tool_call_id`."""

    tool_call_id: str
    conversation_key: str
    calls: tuple[ChildCallView, ...]
    calls_total: int
    latest_text: str

    def to_payload(self) -> Payload:
        return {
            "call": self.tool_call_id,
            "key": self.conversation_key,
            "calls": [call.to_payload() for call in self.calls],
            "total": self.calls_total,
            "text": self.latest_text,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> ChildView:
        return cls(
            tool_call_id=payload["call"],
            conversation_key=payload["key"],
            calls=tuple(ChildCallView.from_payload(call) for call in payload["calls"]),
            calls_total=payload["total"],
            latest_text=payload["text"],
        )
