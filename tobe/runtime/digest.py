"""Canonical JSON and the argument digest an approval is bound to.

Mind (when it binds an approval) and every Hand (when it checks an offer) must compute the
same bytes, so both import this one function: keys sorted, no insignificant whitespace,
non-ASCII kept as UTF-8, SHA-256 in lowercase hex.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def arguments_digest(arguments: Any) -> str:
    return hashlib.sha256(canonical_json(arguments).encode("utf-8")).hexdigest()
