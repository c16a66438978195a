"""What a sealed run stores instead of raw values, and how readers open it again.

Write side (`Sealer`, one per sealed run): every stored form is already the *redacted* form
(thinking dropped, arguments replaced by a note, a tool result by `REMOVED`) plus an envelope
(`mind.sealing.cipher`) under the key `"sealed"` holding the raw values. So a reader that does
not open envelopes (the compaction's summariser, for one) can never see raw values.

Read side (`open_*`): with the run's key, the raw values come back; without it (shredded) the
redacted form stays, a tool result names which datasets were queried with what status, and
the message is marked `redacted`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mind.sealing import cipher
from mind.sealing.keyring import REMOVED, KeyRing

if TYPE_CHECKING:
    from mind.conversation.history import HistoryMessage

# What a sealed tool call's arguments read as once they are gone.
ARGUMENTS_NOTE: dict[str, Any] = {"note": "sensitive data removed after the turn"}
SEALED = "sealed"


class Sealer:
    """The stored forms of one sealed run; `sensitive` maps its sensitive tools to datasets."""

    def __init__(self, run_id: str, key: bytes, sensitive: dict[str, str]) -> None:
        self.run_id = run_id
        self.sensitive = dict(sensitive)
        self._key = key

    def seal(self, value: Any) -> dict[str, str]:
        return cipher.seal(value, self.run_id, self._key)

    def seal_text(self, text: str) -> str:
        return cipher.seal_text(text, self.run_id, self._key)

    def assistant(self, payload: dict[str, Any]) -> dict[str, Any]:
        """An assistant message's payload: thinking and tool-call arguments sealed."""
        calls = payload.get("tool_calls", [])
        if not calls and not payload.get("thinking"):
            return payload
        stored = dict(payload)
        stored["thinking"] = []
        stored["tool_calls"] = [_noted(call) for call in calls]
        stored[SEALED] = self.seal({"thinking": payload.get("thinking", []), "tool_calls": calls})
        return stored

    def tool_result(self, text: str, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A tool result message's text and payload: the text sealed."""
        return REMOVED, {**payload, SEALED: self.seal({"text": text})}

    def projection(self, projection: dict[str, Any], field: str) -> dict[str, Any]:
        """A projection column (`arguments_projection` or `result_projection`) with its raw
        `field` (`arguments_json` or `text`) sealed."""
        if field not in projection:
            return projection
        stored = {k: v for k, v in projection.items() if k != field}
        stored[SEALED] = self.seal({field: projection[field]})
        return stored

    def reveal(self, projection: dict[str, Any]) -> dict[str, Any]:
        """A projection column as written before `projection` sealed it (this run's only)."""
        envelope: Any = projection.get(SEALED)
        if not cipher.is_envelope(envelope) or envelope["sealed_by"] != self.run_id:
            return projection
        rest = {k: v for k, v in projection.items() if k != SEALED}
        return {**rest, **cipher.unseal(envelope, self._key)}

    def event(self, stored: dict[str, Any], plain: dict[str, Any]) -> dict[str, Any]:
        """An outbox payload: the view of the stored row, and the plain view sealed."""
        if stored == plain:
            return stored
        return {**stored, SEALED: self.seal(plain)}


_NOTE_JSON = json.dumps(ARGUMENTS_NOTE, separators=(",", ":"))


def _noted(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call["id"],
        "name": call["name"],
        "arguments": ARGUMENTS_NOTE,
        "raw_arguments": _NOTE_JSON,
        "argument_error": None,
        "thought_signature": None,
        "provider_id": call.get("provider_id", ""),
    }


class Overlay:
    """A row with some attributes replaced (rows are ORM objects or named tuples)."""

    def __init__(self, row: Any, **values: Any) -> None:
        self._row = row
        self._values = values

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__["_values"]
        return values[name] if name in values else getattr(self.__dict__["_row"], name)


def open_envelope(envelope: Any, ring: KeyRing) -> Any | None:
    """The sealed value, or None when its run's key is gone."""
    key = ring.key(str(envelope["sealed_by"]))
    if key is None:
        return None
    return cipher.unseal(envelope, key)


def open_payload(payload: dict[str, Any], ring: KeyRing) -> tuple[dict[str, Any], str | None]:
    """(payload without its envelope, merged with the sealed values when they can be read;
    the replacement text of its run when they cannot, else None)."""
    envelope = payload[SEALED]
    rest = {k: v for k, v in payload.items() if k != SEALED}
    opened = open_envelope(envelope, ring)
    if opened is None:
        return {**rest, "redacted": True}, ring.replacement(str(envelope["sealed_by"]))
    return {**rest, **opened}, None


def open_message(row: Any, ring: KeyRing) -> Any:
    """A message row as it reads now (unchanged unless it holds an envelope)."""
    payload = row.payload or {}
    if SEALED not in payload:
        return row
    opened, gone = open_payload(payload, ring)
    text = opened.pop("text", row.text)
    if gone is not None and row.role == "tool":
        text = gone
    return Overlay(row, payload=opened, text=text)


def open_projection(row: Any, ring: KeyRing) -> Any:
    """A tool projection row as it reads now."""
    values: dict[str, Any] = {}
    for column in ("arguments_projection", "result_projection"):
        projection = getattr(row, column) or {}
        if SEALED in projection:
            values[column], _ = open_payload(projection, ring)
    return Overlay(row, **values) if values else row


def open_event(type: str, payload: dict[str, Any], ring: KeyRing) -> dict[str, Any]:
    """An outbox payload as it reads now."""
    if SEALED not in payload:
        return payload
    opened, gone = open_payload(payload, ring)
    if gone is None:
        return opened
    if type != "message_appended":
        opened.pop("redacted", None)
    elif opened.get("role") == "tool" and opened.get("text") == REMOVED:
        opened["text"] = gone
    return opened


def open_json(value: Any, ring: KeyRing, gone: Any) -> Any:
    """A JSON column's value as it reads now; `gone` once its run's key is deleted."""
    if not cipher.is_envelope(value):
        return value
    opened = open_envelope(value, ring)
    return gone if opened is None else opened


def open_text(text: str, ring: KeyRing) -> str:
    """A text column's value as it reads now; `REMOVED` once its run's key is deleted."""
    envelope = cipher.text_envelope(text)
    if envelope is None:
        return text
    opened = open_envelope(envelope, ring)
    return REMOVED if opened is None else str(opened)


def redacted_text(text: str) -> str:
    """A text column's value as a reader that opens no envelope shows it (`REMOVED` when
    sealed): for readers whose output is itself stored, such as a compaction's summary."""
    return REMOVED if cipher.text_envelope(text) is not None else text


def redacted_history(message: HistoryMessage, replacement: str) -> HistoryMessage:
    """A message of a shredded run, kept in memory by its conversation, as it now reads from
    the store (`open_message` once the key is gone): the same forms as `Sealer` stores."""
    if message.role == "tool":
        return replace(message, text=replacement)
    if message.role != "assistant" or not (message.thinking or message.tool_calls):
        return message
    calls = tuple(
        replace(
            call,
            arguments=ARGUMENTS_NOTE,
            raw_arguments=_NOTE_JSON,
            argument_error=None,
            thought_signature=None,
        )
        for call in message.tool_calls
    )
    return replace(message, thinking=(), tool_calls=calls)
