"""The outbox: reading after a cursor, pruning, and the ordering guarantee under concurrency."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import pytest
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mind.store import outbox
from mind.store.models import OutboxEvent

Sessions = async_sessionmaker[AsyncSession]


async def append(sessions: Sessions, n: int) -> list[int]:
    ids = []
    for i in range(n):
        async with sessions() as session, session.begin():
            event = await outbox.append_event(
                session, type="note", conversation_key="p_a", audience=["alice"], payload={"i": i}
            )
            ids.append(event.id)
    return ids


async def test_events_are_read_in_id_order_after_a_cursor(sessions: Sessions) -> None:
    async with sessions() as session:
        assert await outbox.head_event_id(session) == 0
        assert await outbox.oldest_event_id(session) is None
    ids = await append(sessions, 5)
    assert ids == sorted(ids)
    async with sessions() as session:
        first = await outbox.read_events(session, after_id=0, limit=2)
        rest = await outbox.read_events(session, after_id=first[-1].id, limit=10)
        assert [e.id for e in first + rest] == ids
        assert [e.payload["i"] for e in first + rest] == [0, 1, 2, 3, 4]
        assert rest[0].audience == ["alice"]
        assert await outbox.head_event_id(session) == ids[-1]
        assert await outbox.oldest_event_id(session) == ids[0]


async def test_prune_keeps_the_newest_events(sessions: Sessions) -> None:
    ids = await append(sessions, 5)
    async with sessions() as session, session.begin():
        assert await outbox.prune(session, keep=2) == 3
        assert await outbox.prune(session, keep=2) == 0
    async with sessions() as session:
        assert await outbox.oldest_event_id(session) == ids[3]
        assert await outbox.head_event_id(session) == ids[4]
        with pytest.raises(ValueError):
            await outbox.prune(session, keep=0)


async def test_an_event_id_is_never_handed_out_twice(sessions: Sessions) -> None:
    ids = await append(sessions, 3)
    async with sessions() as session, session.begin():
        await session.execute(delete(OutboxEvent))
    [again] = await append(sessions, 1)
    assert again > ids[-1]


@dataclass
class Observed:
    committed: set[int] = field(default_factory=set)
    seen: list[int] = field(default_factory=list)
    went_backwards: list[tuple[int, int]] = field(default_factory=list)

    @property
    def missed(self) -> set[int]:
        return self.committed - set(self.seen)


async def concurrent_writers_and_reader(
    sessions: Sessions, *, seed: int, writers: int = 6, events_each: int = 8
) -> Observed:
    """Writers append with random delays inside their transactions; a reader resumes by id."""
    rng = random.Random(seed)
    observed = Observed()
    done = asyncio.Event()

    async def writer(w: int) -> None:
        for _ in range(events_each):
            async with sessions() as session, session.begin():
                await asyncio.sleep(rng.uniform(0, 0.003))
                event = await outbox.append_event(
                    session, type="note", conversation_key="p_a", audience=[], payload={"w": w}
                )
                await asyncio.sleep(rng.uniform(0, 0.01))
            observed.committed.add(event.id)

    async def reader() -> None:
        last = 0
        while True:
            finished = done.is_set()
            async with sessions() as session:
                events = await outbox.read_events(session, after_id=last, limit=100)
            for event in events:
                if event.id <= last:
                    observed.went_backwards.append((last, event.id))
                observed.seen.append(event.id)
                last = max(last, event.id)
            if finished and not events:
                return
            await asyncio.sleep(0.001)

    reading = asyncio.create_task(reader())
    await asyncio.gather(*(writer(w) for w in range(writers)))
    done.set()
    await reading
    return observed


async def test_reader_sees_every_event_once_in_order_under_concurrent_writers(
    sessions: Sessions,
) -> None:
    observed = await concurrent_writers_and_reader(sessions, seed=1)
    assert len(observed.committed) == 48
    assert observed.went_backwards == []
    assert observed.missed == set()
    assert observed.seen == sorted(observed.committed)


async def test_ordering_check_detects_writers_without_the_lock(
    sessions: Sessions, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the advisory lock PostgreSQL reveals ids out of order and the reader skips some."""
    if not store_url.startswith("postgresql"):
        pytest.skip("SQLite's single writer orders ids without the outbox lock")

    async def no_lock(_session: AsyncSession) -> None:
        return None

    monkeypatch.setattr(outbox, "_serialise_writers", no_lock)
    for seed in range(5):
        observed = await concurrent_writers_and_reader(sessions, seed=seed)
        if observed.missed:
            break
    assert observed.missed, "unserialised writers never skipped an event: the test is blind"
