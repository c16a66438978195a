"""MQTT payloads, which are bytes on the wire, as JSON values and back.

Devices publish JSON documents, plain words ("on", "21.5") or raw bytes; the agent reads the
parsed value when it is JSON, the text otherwise, and base64 (flagged `binary`) for bytes that
are not UTF-8.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any


def decode(payload: bytes, max_bytes: int) -> dict[str, Any]:
    """The observable fields of a payload: `payload`, `binary`, `size_bytes`, `oversized`."""
    fields: dict[str, Any] = {"size_bytes": len(payload), "binary": False, "oversized": False}
    if len(payload) > max_bytes:
        return {**fields, "payload": None, "oversized": True}
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return {**fields, "payload": base64.b64encode(payload).decode(), "binary": True}
    try:
        return {**fields, "payload": json.loads(text, parse_constant=_refuse)}
    except ValueError:
        return {**fields, "payload": text}


def _refuse(constant: str) -> Any:
    """NaN and Infinity are no JSON: such a payload is text."""
    raise ValueError(constant)


def encode(value: Any) -> bytes:
    """A string is sent as its text; any other JSON value as compact JSON."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def digest(payload: bytes) -> str:
    """A short fingerprint telling a repeated payload from a changed one."""
    return hashlib.sha256(payload).hexdigest()[:32]
