"""Shared values of the approval tests: principals, the conversation, calls to review."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mind.tools.authorizer import CallUnderReview
from mind.tools.base import DetailMode, Effect

OWNER = "alice"
MEMBER = "bob"
STRANGER = "mallory"
CONVERSATION = "g_approvals"

MakeCall = Callable[..., CallUnderReview]


def make_call(**overrides: Any) -> CallUnderReview:
    values: dict[str, Any] = {
        "tool": "write_note",
        "effect": Effect.WORKSPACE_WRITE,
        "hand_id": "laptop",
        "arguments": {"path": "notes.txt", "text": "hello"},
        "conversation_key": CONVERSATION,
        "run_id": "run_1",
        "tool_call_id": "call_1",
        "principal": OWNER,
        "detail_mode": DetailMode.SUMMARY,
        "decision_text": 'write_note {"path":"notes.txt","text":"hello"}',
    }
    values.update(overrides)
    return CallUnderReview(**values)
