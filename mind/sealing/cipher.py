"""Envelopes: a JSON value encrypted under one run's key, naming that run.

An envelope is `{"sealed_by": <run id>, "sealed": <base64 of nonce ‖ AES-256-GCM ciphertext>}`
(the run id is the associated data), so a reader needs nothing but the envelope to know which
key opens it. Text columns hold the same envelope as its compact JSON behind `TEXT_MARK`.
`cryptography` is loaded by the first sealed turn, not with the Mind.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

KEY_BYTES = 32
_NONCE_BYTES = 12
TEXT_MARK = "sealed:"


def new_key() -> bytes:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM.generate_key(bit_length=KEY_BYTES * 8)


def seal(value: Any, run_id: str, key: bytes) -> dict[str, str]:
    """`value` (JSON) encrypted under `key` for `run_id`."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = os.urandom(_NONCE_BYTES)
    plain = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    sealed = AESGCM(key).encrypt(nonce, plain, run_id.encode())
    return {"sealed_by": run_id, "sealed": base64.b64encode(nonce + sealed).decode()}


def unseal(envelope: dict[str, Any], key: bytes) -> Any:
    """The value of an envelope sealed under `key`; ValueError when it is not."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    data = base64.b64decode(envelope["sealed"])
    try:
        plain = AESGCM(key).decrypt(
            data[:_NONCE_BYTES], data[_NONCE_BYTES:], str(envelope["sealed_by"]).encode()
        )
    except InvalidTag as exc:
        raise ValueError("the envelope was not sealed under this key") from exc
    return json.loads(plain)


def is_envelope(value: Any) -> bool:
    return isinstance(value, dict) and "sealed_by" in value and "sealed" in value


def seal_text(text: str, run_id: str, key: bytes) -> str:
    """A text column's sealed form."""
    return TEXT_MARK + json.dumps(seal(text, run_id, key), separators=(",", ":"))


def text_envelope(text: str) -> dict[str, Any] | None:
    """The envelope a text column holds; None for a plain text."""
    if not text.startswith(TEXT_MARK):
        return None
    try:
        envelope = json.loads(text[len(TEXT_MARK) :])
    except json.JSONDecodeError:
        return None
    return envelope if is_envelope(envelope) else None
