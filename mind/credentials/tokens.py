"""Token format `tobe_<prefix>_<secret>`.

The prefix is random, not secret, and is the lookup key stored in `credentials.prefix`; the
secret is 32 random bytes (URL-safe base64) of which only the SHA-256 hex digest is stored.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

TOKEN_PREFIX = "tobe"
_PREFIX_BYTES = 8
_SECRET_BYTES = 32
_TOKEN = re.compile(r"tobe_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")


@dataclass(frozen=True)
class TokenParts:
    prefix: str
    secret: str


def new_token() -> tuple[TokenParts, str]:
    """A fresh random prefix and secret, and the token string that carries both."""
    parts = TokenParts(
        prefix=secrets.token_hex(_PREFIX_BYTES), secret=secrets.token_urlsafe(_SECRET_BYTES)
    )
    return parts, f"{TOKEN_PREFIX}_{parts.prefix}_{parts.secret}"


def parse_token(token: str) -> TokenParts | None:
    """The token's parts, or None when it is not a well-formed ToBe token."""
    match = _TOKEN.fullmatch(token)
    if match is None:
        return None
    return TokenParts(prefix=match.group(1), secret=match.group(2))


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(secret: str, stored_hash: str) -> bool:
    """Constant-time comparison of a presented secret with a stored hash."""
    return hmac.compare_digest(hash_secret(secret), stored_hash)
