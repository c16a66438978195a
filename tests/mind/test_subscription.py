"""The merged subscription: outbox replay, marker, live tail — no gap, no duplicate."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mind.conversation.storage import Storage
from mind.events.bus import EphemeralEvent, EventBus
from mind.events.subscription import ReplayDone, SnapshotRequired, subscribe
from mind.store.outbox import append_event, prune

TOTAL = 120


async def _write(storage: Storage, count: int, deltas: bool = True) -> None:
    for index in range(count):
        async with storage.write() as tx:
            await tx.event("conversation_created", "p_x", ["alice"], {"key": f"p_{index}"})
        if deltas and index % 7 == 0:
            storage.bus.publish(EphemeralEvent("text_delta", "p_x", ("alice",), "run", text="d"))
        await asyncio.sleep(0)


async def _write_without_rows(storage: Storage, count: int) -> None:
    """Like another component would: append, commit, then only say "read the outbox"."""
    for index in range(count):
        async with storage.sessions() as session, session.begin():
            await append_event(
                session, type="credential_revoked", conversation_key="", audience=[],
                payload={"credential_id": f"c{index}"},
            )
        storage.bus.durable_committed()
        await asyncio.sleep(0)


async def _collect(
    sessions: async_sessionmaker[AsyncSession], bus: EventBus, after_id: int, until: int
) -> tuple[list[int], int, int]:
    durable: list[int] = []
    ephemeral = 0
    replay_end = -1
    async for item in subscribe(sessions, bus, after_id, include_ephemeral=True):
        if isinstance(item, ReplayDone):
            replay_end = item.last_durable_id
        elif isinstance(item, EphemeralEvent):
            ephemeral += 1
        else:
            durable.append(item.id)
            if item.id >= until:
                break
    return durable, replay_end, ephemeral


async def test_subscribers_joining_during_writes_see_every_later_event_exactly_once(
    sessions: async_sessionmaker[AsyncSession],
):
    bus = EventBus()
    storage = Storage(sessions, bus)
    await _write(storage, 10)
    writers = asyncio.gather(
        _write(storage, (TOTAL - 10) // 2), _write_without_rows(storage, (TOTAL - 10) // 2)
    )
    early = asyncio.create_task(_collect(sessions, bus, 0, TOTAL))
    await asyncio.sleep(0.05)
    late = asyncio.create_task(_collect(sessions, bus, 5, TOTAL))
    await writers
    (from_zero, replay_zero, _), (from_five, replay_five, _) = await asyncio.wait_for(
        asyncio.gather(early, late), 60
    )
    assert from_zero == list(range(1, TOTAL + 1))
    assert from_five == list(range(6, TOTAL + 1))
    assert replay_zero >= 10 and replay_five >= 10


async def test_live_subscribers_get_ephemeral_events_and_lose_only_those_when_full(
    sessions: async_sessionmaker[AsyncSession],
):
    bus = EventBus(capacity=2)
    storage = Storage(sessions, bus)
    collector = asyncio.create_task(_collect(sessions, bus, 0, 3))
    await asyncio.sleep(0.05)
    for _ in range(10):  # nobody reads meanwhile: all but two are dropped
        bus.publish(EphemeralEvent("text_delta", "p_x", ("alice",), "run", text="d"))
    await _write(storage, 3, deltas=False)
    durable, _, ephemeral = await asyncio.wait_for(collector, 30)
    assert durable == [1, 2, 3]
    assert ephemeral == 2


async def test_resuming_before_the_oldest_kept_event_requires_a_snapshot(
    sessions: async_sessionmaker[AsyncSession],
):
    storage = Storage(sessions, EventBus())
    await _write(storage, 5)
    async with sessions() as session, session.begin():
        await prune(session, keep=2)
    with pytest.raises(SnapshotRequired, match="snapshot required"):
        await _collect(sessions, storage.bus, 2, 5)
    durable, _, _ = await _collect(sessions, storage.bus, 3, 5)
    assert durable == [4, 5]


async def test_handed_over_rows_after_a_gap_are_not_used_before_the_missing_ones(
    sessions: async_sessionmaker[AsyncSession],
):
    storage = Storage(sessions, EventBus())
    collector = asyncio.create_task(_collect(sessions, storage.bus, 0, 2))
    await asyncio.sleep(0.05)
    async with sessions() as session, session.begin():  # committed, but nobody is told
        await append_event(session, type="x", conversation_key="", audience=[], payload={})
    await _write(storage, 1, deltas=False)  # hands over row 2 while row 1 was never seen
    durable, _, _ = await asyncio.wait_for(collector, 30)
    assert durable == [1, 2]
