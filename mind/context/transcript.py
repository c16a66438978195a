"""Messages as the summariser reads them, and the tool batches a cut must keep whole.

The summariser gets the messages as plain text in one request, not as a transcript of turns:
it answers no call, so it needs no tool-call pairing, and one request shape serves every wire.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from mind.conversation.history import HistoryMessage, gmt_stamp


@dataclass(frozen=True)
class Batch:
    """Messages `start` (inclusive) to `end` (exclusive) of a history: a message and the tool
    results that follow it. A cut between two batches never separates a call from a result."""

    start: int
    end: int
    call_ids: frozenset[str]


def batches(history: Sequence[HistoryMessage]) -> list[Batch]:
    found: list[Batch] = []
    start = 0
    calls: set[str] = set()
    for index, message in enumerate(history):
        if message.role == "tool" and index > 0:
            continue
        if index > 0:
            found.append(Batch(start, index, frozenset(calls)))
        start, calls = index, {call.id for call in message.tool_calls}
    if history:
        found.append(Batch(start, len(history), frozenset(calls)))
    return found


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    kept = max(0, limit - 60)
    return f"{text[:kept]} […{len(text) - kept} more characters not shown]"


def render(message: HistoryMessage, limit: int) -> str:
    """One message as a line of the summariser's input, at most about `limit` characters."""
    stamp = gmt_stamp(message.created_at)
    if message.role == "tool":
        status = " (error)" if message.is_error else ""
        return f"{stamp}Result of {message.tool_name}{status}: {_clip(message.text, limit)}"
    if message.role == "note":
        return f"{stamp}Platform note: {_clip(message.text, limit)}"
    who = "User" if message.role == "user" else "Assistant"
    parts = [f"{stamp}{who}: {_clip(message.text, limit)}" if message.text else ""]
    for call in message.tool_calls:
        arguments = call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False)
        parts.append(f"{stamp}{who} called {call.name} with {_clip(arguments, limit)}")
    return "\n".join(part for part in parts if part) or f"{stamp}{who}: (no text)"
