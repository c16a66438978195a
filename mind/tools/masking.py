"""Sensitive tool arguments replaced by a mask, for every text a person or the Reviewer reads.

An argument is sensitive when its JSON Schema property has `"x-sensitive": true` (at any
depth) or its name says it is a credential (password, token, secret, api key…).
"""

from __future__ import annotations

import re
from typing import Any

from tobe.runtime.redact import MASK

_SECRET_NAME = re.compile(r"(?i)(passw|secret|token|api[_-]?key|credential|private[_-]?key)")


def _is_sensitive(name: str, schema: dict[str, Any]) -> bool:
    return bool(schema.get("x-sensitive")) or bool(_SECRET_NAME.search(name))


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _masked(value: Any, schema: dict[str, Any], value_limit: int | None) -> Any:
    if isinstance(value, dict):
        return _masked_object(value, schema, value_limit)
    if isinstance(value, list):
        items = schema.get("items")
        sub = items if isinstance(items, dict) else {}
        return [_masked(item, sub, value_limit) for item in value]
    if isinstance(value, str) and value_limit is not None:
        return cut(value, value_limit)
    return value


def _masked_object(
    value: dict[str, Any], schema: dict[str, Any], value_limit: int | None
) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    result: dict[str, Any] = {}
    for key, item in value.items():
        sub = properties.get(key) or (extra if isinstance(extra, dict) else {})
        result[key] = MASK if _is_sensitive(key, sub) else _masked(item, sub, value_limit)
    return result


def masked_arguments(
    arguments: dict[str, Any], schema: dict[str, Any] | None, value_limit: int | None = None
) -> dict[str, Any]:
    """The arguments with every sensitive value masked (strings cut at `value_limit`, if set)."""
    return _masked_object(arguments, schema or {}, value_limit)
