"""Authentication answers kept in memory, so a call does not cost a store read.

Every call of the Mind API and HandLink authenticates its bearer token. A positive answer is
kept under the token's SHA-256 (never the token itself) until the first of: the credential's
expiry, `ttl` seconds, or its revocation. Revocations go through the running Mind (the offline
CLI cannot run beside it), which records them in `LiveCalls` before ending their streams; a
cached answer for a revoked credential is dropped at its next use, so a revocation takes effect
on the next call, as it does without the cache. Unknown, revoked or expired tokens are never
kept: a credential issued a moment ago works at once, and random tokens cannot fill memory.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from mind.credentials.identity import Identity

Authenticate = Callable[[str], Awaitable[Identity | None]]
IsRevoked = Callable[[str], bool]

DEFAULT_TTL = 30.0
DEFAULT_SIZE = 1024


class CachedAuthenticator:
    def __init__(
        self,
        authenticate: Authenticate,
        is_revoked: IsRevoked,
        *,
        ttl: float = DEFAULT_TTL,
        size: int = DEFAULT_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._authenticate = authenticate
        self._is_revoked = is_revoked
        self._ttl = ttl
        self._size = size
        self._clock = clock
        self._answers: OrderedDict[bytes, tuple[Identity, float]] = OrderedDict()

    async def __call__(self, token: str) -> Identity | None:
        key = hashlib.sha256(token.encode()).digest()
        kept = self._answers.get(key)
        if kept is not None:
            cached, cached_at = kept
            if self._usable(cached, cached_at):
                self._answers.move_to_end(key)
                return cached
            del self._answers[key]
            if self._is_revoked(cached.credential_id):
                return None
        identity = await self._authenticate(token)
        if identity is None or self._is_revoked(identity.credential_id):
            return None
        self._answers[key] = (identity, self._clock())
        while len(self._answers) > self._size:
            self._answers.popitem(last=False)
        return identity

    def _usable(self, identity: Identity, cached_at: float) -> bool:
        if self._clock() - cached_at >= self._ttl or self._is_revoked(identity.credential_id):
            return False
        return identity.expires_at is None or identity.expires_at > datetime.now(UTC)
