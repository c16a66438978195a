"""Authentication answers are kept in memory, but never past a revocation or an expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mind.credentials.cache import CachedAuthenticator
from mind.credentials.identity import Identity

TOKEN = "tobe_abcdefgh_secretsecretsecret"


class Store:
    """Stands in for the store: counts reads, answers from a dict of token -> identity."""

    def __init__(self) -> None:
        self.known: dict[str, Identity] = {}
        self.reads = 0

    async def __call__(self, token: str) -> Identity | None:
        self.reads += 1
        return self.known.get(token)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def identity(expires_at: datetime | None = None) -> Identity:
    return Identity("cr_1", "service", "face", ("gateway",), expires_at=expires_at)


async def test_a_token_seen_before_is_answered_without_reading_the_store() -> None:
    store = Store()
    store.known[TOKEN] = identity()
    cache = CachedAuthenticator(store, lambda _id: False)
    assert await cache(TOKEN) == identity()
    assert await cache(TOKEN) == identity()
    assert store.reads == 1


async def test_a_revoked_credential_is_refused_at_its_next_call() -> None:
    store = Store()
    store.known[TOKEN] = identity()
    revoked: set[str] = set()
    cache = CachedAuthenticator(store, revoked.__contains__)
    assert await cache(TOKEN) is not None
    revoked.add("cr_1")  # what the Mind records when the revocation commits
    assert await cache(TOKEN) is None
    assert await cache(TOKEN) is None


async def test_an_expired_credential_is_not_answered_from_memory() -> None:
    store = Store()
    soon = datetime.now(UTC) + timedelta(milliseconds=50)
    store.known[TOKEN] = identity(expires_at=soon)
    cache = CachedAuthenticator(store, lambda _id: False)
    assert await cache(TOKEN) is not None
    del store.known[TOKEN]  # the store's own check now refuses it
    while datetime.now(UTC) <= soon:
        pass
    assert await cache(TOKEN) is None
    assert store.reads == 2


async def test_answers_are_read_again_after_the_time_to_live() -> None:
    store, clock = Store(), Clock()
    store.known[TOKEN] = identity()
    cache = CachedAuthenticator(store, lambda _id: False, ttl=30.0, clock=clock)
    await cache(TOKEN)
    clock.now = 29.0
    await cache(TOKEN)
    clock.now = 30.0
    await cache(TOKEN)
    assert store.reads == 2


async def test_unknown_tokens_are_never_kept() -> None:
    store = Store()
    cache = CachedAuthenticator(store, lambda _id: False)
    assert await cache(TOKEN) is None
    store.known[TOKEN] = identity()  # issued a moment later
    assert await cache(TOKEN) == identity()
    assert store.reads == 2


async def test_memory_holds_at_most_size_answers() -> None:
    store = Store()
    tokens = [f"tobe_abcdefgh_secret{n:012d}" for n in range(5)]
    for token in tokens:
        store.known[token] = identity()
    cache = CachedAuthenticator(store, lambda _id: False, size=3)
    for token in tokens:
        await cache(token)
    await cache(tokens[0])  # dropped as the oldest: read again
    assert store.reads == 6
