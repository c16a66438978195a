"""The merged subscription: outbox replay, marker, live tail — no gap, no duplicate."""

from __future__ import annotations

import asyncio

import pytest

import mind.events.subscription as subscription_module
from mind.events.bus import EphemeralEvent, EventBus
from mind.events.subscription import ReplayDone, SnapshotRequired, subscribe
from mind.store import outbox
from mind.store.database import Database
from mind.store.models import OutboxEvent
from mind.store.outbox import prune
from mind.store.write_tx import WriteTx

TOTAL = 120


def _silent_event(tx: WriteTx, type: str, payload: dict[str, str]) -> None:
    """Append an event the Database does not hand to the bus (as a writer passing no rows),
    in outbox order like any other (`tx.event` without the publishing)."""
    if outbox.needs_writer_lock(tx.connection.dialect):
        tx.execute(outbox.WRITER_LOCK)
    tx.insert(outbox.new_event(type, "", [], payload))


async def _write(database: Database, bus: EventBus, count: int, deltas: bool = True) -> None:
    for index in range(count):
        await database.write(
            lambda tx, index=index: tx.event(
                "conversation_created", "p_x", ["alice"], {"key": f"p_{index}"}
            )
        )
        if deltas and index % 7 == 0:
            bus.publish(EphemeralEvent("text_delta", "p_x", ("alice",), "run", text="d"))
        await asyncio.sleep(0)


async def _write_without_rows(database: Database, bus: EventBus, count: int) -> None:
    """Commit events the bus does not get, then only say "read the outbox"."""
    for index in range(count):
        await database.write(
            lambda tx, index=index: _silent_event(
                tx, "credential_revoked", {"credential_id": f"c{index}"}
            )
        )
        bus.durable_committed()
        await asyncio.sleep(0)


Collected = tuple[list[int], int, int]


async def _collect(
    database: Database,
    bus: EventBus,
    after_id: int,
    until: int,
    replayed: asyncio.Event | None = None,
) -> Collected:
    """(durable ids, the ReplayDone id, how many ephemeral events) up to durable id `until`."""
    durable: list[int] = []
    ephemeral = 0
    replay_end = -1
    async for item in subscribe(database, bus, after_id, include_ephemeral=True):
        if isinstance(item, ReplayDone):
            replay_end = item.last_durable_id
            if replayed is not None:
                replayed.set()
        elif isinstance(item, EphemeralEvent):
            ephemeral += 1
        else:
            durable.append(item.id)
            if item.id >= until:
                break
    return durable, replay_end, ephemeral


async def _live_collector(
    database: Database, bus: EventBus, after_id: int, until: int
) -> asyncio.Task[Collected]:
    """A collector that has had its ReplayDone, so everything from now on reaches it live."""
    replayed = asyncio.Event()
    collector = asyncio.create_task(_collect(database, bus, after_id, until, replayed))
    waiting = asyncio.create_task(replayed.wait())
    await asyncio.wait({collector, waiting}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if collector.done():
        collector.result()  # its failure, if that is what ended it
    assert replayed.is_set(), "the collector's replay did not end within 30s"
    return collector


def _bus(database: Database, capacity: int = 1024) -> EventBus:
    """A bus the database hands its committed events to, as the Mind wires them."""
    bus = EventBus(capacity=capacity)
    database.on_commit(bus.durable_committed)
    return bus


async def test_subscribers_joining_during_writes_see_every_later_event_exactly_once(
    database: Database,
):
    bus = _bus(database)
    await _write(database, bus, 10)
    writers = asyncio.gather(
        _write(database, bus, (TOTAL - 10) // 2),
        _write_without_rows(database, bus, (TOTAL - 10) // 2),
    )
    early = await _live_collector(database, bus, 0, TOTAL)
    late = asyncio.create_task(_collect(database, bus, 5, TOTAL))
    await writers
    (from_zero, replay_zero, _), (from_five, replay_five, _) = await asyncio.wait_for(
        asyncio.gather(early, late), 60
    )
    assert from_zero == list(range(1, TOTAL + 1))
    assert from_five == list(range(6, TOTAL + 1))
    assert replay_zero >= 10 and replay_five >= 10


async def test_live_subscribers_get_ephemeral_events_and_lose_only_those_when_full(
    database: Database,
):
    bus = _bus(database, capacity=2)
    collector = await _live_collector(database, bus, 0, 3)
    for _ in range(10):  # nobody reads meanwhile: all but two are dropped
        bus.publish(EphemeralEvent("text_delta", "p_x", ("alice",), "run", text="d"))
    await _write(database, bus, 3, deltas=False)
    durable, _, ephemeral = await asyncio.wait_for(collector, 30)
    assert durable == [1, 2, 3]
    assert ephemeral == 2


async def test_resuming_before_the_oldest_kept_event_requires_a_snapshot(database: Database):
    bus = _bus(database)
    await _write(database, bus, 5)
    await database.write(lambda tx: prune(tx.session, keep=2))
    with pytest.raises(SnapshotRequired, match="snapshot required"):
        await _collect(database, bus, 2, 5)
    durable, _, _ = await _collect(database, bus, 3, 5)
    assert durable == [4, 5]


async def test_handed_over_rows_after_a_gap_are_not_used_before_the_missing_ones(
    database: Database,
):
    bus = _bus(database)
    collector = await _live_collector(database, bus, 0, 2)
    await database.write(lambda tx: _silent_event(tx, "x", {}))  # committed, nobody is told
    await _write(database, bus, 1, deltas=False)  # hands over row 2 while row 1 was never seen
    durable, _, _ = await asyncio.wait_for(collector, 30)
    assert durable == [1, 2]


async def test_deltas_keep_their_place_among_durable_events_read_from_the_outbox(
    database: Database, monkeypatch: pytest.MonkeyPatch
):
    bus = _bus(database)
    delta = EphemeralEvent("text_delta", "p_x", ("alice",), "run", text="before")
    later = EphemeralEvent("text_delta", "p_x", ("alice",), "run", text="after")
    real_page = subscription_module._page
    armed = False

    async def page_racing_a_run(db: Database, after_id: int) -> list[OutboxEvent]:
        # While the subscriber reads the outbox, a run publishes a delta, commits its message
        # and publishes the next delta: the read then sees the commit.
        nonlocal armed
        if armed:
            armed = False
            bus.publish(delta)
            await _write(database, bus, 1, deltas=False)
            bus.publish(later)
        return await real_page(db, after_id)

    monkeypatch.setattr(subscription_module, "_page", page_racing_a_run)
    items: list[object] = []
    stream = subscribe(database, bus, 0, include_ephemeral=True)
    try:
        async with asyncio.timeout(30):
            assert isinstance(await anext(stream), ReplayDone)
            armed = True
            bus.durable_committed()  # a bare notice: the subscriber reads the outbox
            while len(items) < 3:
                item = await anext(stream)
                items.append(item.id if isinstance(item, OutboxEvent) else item)
    finally:
        await stream.aclose()
    assert items == [delta, 1, later]
