"""The Reviewer's view of the arguments: values shown, sensitive ones masked.

Approval requests and audit rows use the tool runtime's secret-free shape summary
(`mind.tools.summary`). The Reviewer needs to see what a call does, so it gets the values —
except that an argument whose JSON Schema property has `"x-sensitive": true` (at any depth),
or whose name says it is a credential (password, token, secret, api key…), is `[REDACTED]`.
Long values are cut, and the text also passes through the credential redaction of the logs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tobe.runtime.redact import MASK, redact

_SECRET_NAME = re.compile(r"(?i)(passw|secret|token|api[_-]?key|credential|private[_-]?key)")
VALUE_LIMIT = 200
SUMMARY_LIMIT = 2000


def _is_sensitive(name: str, schema: dict[str, Any]) -> bool:
    return bool(schema.get("x-sensitive")) or bool(_SECRET_NAME.search(name))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _masked(value: Any, schema: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        result: dict[str, Any] = {}
        for key, item in value.items():
            sub = properties.get(key) or (extra if isinstance(extra, dict) else {})
            result[key] = MASK if _is_sensitive(key, sub) else _masked(item, sub)
        return result
    if isinstance(value, list):
        items = schema.get("items")
        return [_masked(item, items if isinstance(items, dict) else {}) for item in value]
    if isinstance(value, str):
        return _cut(value, VALUE_LIMIT)
    return value


def masked_arguments(arguments: dict[str, Any], schema: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments with every sensitive value replaced by the mask (long strings cut)."""
    return _masked(arguments, schema or {})


def reviewer_summary(arguments: dict[str, Any], schema: dict[str, Any] | None) -> str:
    """JSON of the masked arguments, cut to a bounded length."""
    text = json.dumps(masked_arguments(arguments, schema), ensure_ascii=False, sort_keys=True)
    return _cut(redact(text), SUMMARY_LIMIT)
