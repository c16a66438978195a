"""Canonical JSON and the argument digest an approval is bound to.

Mind (when it binds an approval) and every Hand (when it checks an offer) must compute the
same bytes, in any language, so the canonical form is RFC 8785 (JSON Canonicalization
Scheme): numbers as ECMAScript writes them (`2.0` and `2` are both `2`), keys sorted by their
UTF-16 code units, strings minimally escaped and UTF-8 encoded. The digest is the SHA-256 of
those bytes in lowercase hex. The contract (`hand.proto`, "Approvals") states the rule and its
test vectors (`proto/tobe/v1/testdata/arguments_digest_vectors.json`).

RFC 8785 has no form for an integer beyond ±(2^53−1) (an IEEE double cannot hold it, so two
languages would disagree on it), for NaN or an infinity, or for a string that is not Unicode
(a lone surrogate): such arguments raise `NotCanonicalizable`, naming where they are.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import rfc8785

# The largest integer every JSON implementation holds exactly (2^53 − 1).
MAX_SAFE_INTEGER = 2**53 - 1
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class NotCanonicalizable(ValueError):
    """A value RFC 8785 cannot write: `path` says where (e.g. `arguments.ids[3]`), `kind` what
    (`integer_out_of_range`, `not_finite`, `not_unicode` as in the test vectors; `not_json`
    for a value no JSON text holds)."""

    def __init__(self, path: str, kind: str, problem: str) -> None:
        super().__init__(f"{path} {problem}")
        self.path = path
        self.kind = kind


def canonical_json(value: Any) -> str:
    """The RFC 8785 text of `value` (raises `NotCanonicalizable`)."""
    return _canonical_bytes(value).decode("utf-8")


def arguments_digest(arguments: Any) -> str:
    """Lowercase hex SHA-256 of the RFC 8785 form (raises `NotCanonicalizable`)."""
    return hashlib.sha256(_canonical_bytes(arguments)).hexdigest()


def _canonical_bytes(value: Any) -> bytes:
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise _locate(value, "arguments") or NotCanonicalizable(
            "arguments", "not_json", str(exc)
        ) from exc


def _locate(value: Any, path: str) -> NotCanonicalizable | None:
    """The first value under `value` that RFC 8785 cannot write, as an error naming it."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if _IDENTIFIER.fullmatch(key) else f"{path}[{_quoted(key)}]"
            found = _leaf_problem(key, f"the key {where}") or _locate(item, where)
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _locate(item, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    return _leaf_problem(value, path)


def _leaf_problem(value: Any, path: str) -> NotCanonicalizable | None:
    try:
        rfc8785.dumps(value)
    except rfc8785.IntegerDomainError:
        return NotCanonicalizable(
            path,
            "integer_out_of_range",
            f"is {value}, an integer beyond ±{MAX_SAFE_INTEGER} (2^53−1) that the approval "
            "digest (RFC 8785) cannot represent; pass such a number as a string",
        )
    except rfc8785.FloatDomainError:
        return NotCanonicalizable(path, "not_finite", f"is {value}, which JSON cannot represent")
    except rfc8785.CanonicalizationError:
        return NotCanonicalizable(
            path,
            "not_unicode",
            "is not valid Unicode text (a lone surrogate); JSON text must be Unicode",
        )
    return None


def _quoted(key: str) -> str:
    return json.dumps(key, ensure_ascii=True)
