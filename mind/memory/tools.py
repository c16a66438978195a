"""The memory tools the model calls: `memory_list`, `memory_read`, `memory_write`,
`memory_delete`, bound to the calling run's conversation.

The argument schemas only say what the arguments are; the rules are checked by
`mind.memory.rules`, so a broken rule comes back as a tool error naming the rule and its
numbers rather than as a schema mismatch. Writes and deletes declare `workspace_write`:
they change what every later run of the conversation reads, so a run triggered by a
low-trust source may not make them (`mind.approvals.policy`), while the policy's `memory`
default (allow) keeps a person from being asked about the conversation's own notebook.
"""

from __future__ import annotations

import json
from typing import Any

from mind.memory.rules import (
    MAX_ENTRIES,
    MAX_KEY_CHARS,
    MAX_TEXT_BYTES,
    MAX_TOTAL_BYTES,
    MemoryRefused,
)
from mind.memory.store import Memory, MemoryListing
from mind.tools.base import Effect, Tool, ToolContext, ToolOutcome

MEMORY_WRITE = "memory_write"
MEMORY_DELETE = "memory_delete"
# The tools that change memory, which the approval policy's `memory` default covers.
CHANGING_TOOLS = frozenset({MEMORY_WRITE, MEMORY_DELETE})

_RULES = (
    f"Keys: 1 to {MAX_KEY_CHARS} characters, no whitespace or '/'. Text: at most "
    f"{MAX_TEXT_BYTES} bytes (UTF-8) per entry; at most {MAX_ENTRIES} entries and "
    f"{MAX_TOTAL_BYTES} bytes in all."
)
_KEY: dict[str, Any] = {"type": "string", "description": "the entry's key (a topic name)"}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _schema(**properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _totals(listing: MemoryListing) -> dict[str, int]:
    return {
        "count": len(listing.entries),
        "total_bytes": listing.total_bytes,
        "entries_left": MAX_ENTRIES - len(listing.entries),
        "bytes_left": MAX_TOTAL_BYTES - listing.total_bytes,
    }


class _MemoryTool:
    hand_id = ""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory


class MemoryListTool(_MemoryTool):
    name = "memory_list"
    description = (
        "List this conversation's memory: every key, sorted, with its size in bytes and when "
        "it was last written. Read an entry's text with memory_read."
    )
    parameters: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
    effect = Effect.READ_ONLY

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return "list the conversation's memory"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        listing = await self._memory.list(context.conversation_key)
        entries = [
            {
                "key": entry.key,
                "bytes": entry.size_bytes,
                "updated_at": entry.updated_at.isoformat(timespec="seconds"),
            }
            for entry in listing.entries
        ]
        return ToolOutcome(ok=True, output=_json({"entries": entries, **_totals(listing)}))


class MemoryReadTool(_MemoryTool):
    name = "memory_read"
    description = "Read the text of one entry of this conversation's memory, by its key."
    parameters = _schema(key=_KEY)
    effect = Effect.READ_ONLY

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return f"read the memory entry {arguments['key']!r}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        key = arguments["key"]
        listing = await self._memory.list(context.conversation_key)
        for entry in listing.entries:
            if entry.key == key:
                return ToolOutcome(ok=True, output=entry.text)
        known = ", ".join(entry.key for entry in listing.entries) or "none"
        return ToolOutcome(ok=False, error=f"no memory entry {key!r}; the keys are: {known}")


class MemoryWriteTool(_MemoryTool):
    name = MEMORY_WRITE
    description = (
        "Remember a text under a key in this conversation's memory, which later runs can read; "
        f"writing an existing key replaces its text. {_RULES}"
    )
    parameters = _schema(
        key=_KEY, text={"type": "string", "description": "what to remember under the key"}
    )
    effect = Effect.WORKSPACE_WRITE

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return f"remember under {arguments['key']!r}: {arguments['text']}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        key = arguments["key"]
        try:
            listing = await self._memory.write(
                context.conversation_key, key, arguments["text"], run_id=context.run_id
            )
        except MemoryRefused as exc:
            return ToolOutcome(ok=False, error=str(exc))
        (written,) = (entry for entry in listing.entries if entry.key == key)
        return ToolOutcome(
            ok=True, output=_json({"written": key, "bytes": written.size_bytes, **_totals(listing)})
        )


class MemoryDeleteTool(_MemoryTool):
    name = MEMORY_DELETE
    description = (
        "Forget one entry of this conversation's memory, by its key; a key that is not there "
        "is already forgotten."
    )
    parameters = _schema(key=_KEY)
    effect = Effect.WORKSPACE_WRITE

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return f"forget the memory entry {arguments['key']!r}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        key = arguments["key"]
        try:
            existed = await self._memory.delete(
                context.conversation_key, key, run_id=context.run_id
            )
        except MemoryRefused as exc:
            return ToolOutcome(ok=False, error=str(exc))
        return ToolOutcome(ok=True, output=_json({"deleted": key, "existed": existed}))


def memory_tools(memory: Memory) -> list[Tool]:
    return [
        MemoryListTool(memory),
        MemoryReadTool(memory),
        MemoryWriteTool(memory),
        MemoryDeleteTool(memory),
    ]
