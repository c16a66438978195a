"""The outbound queue of one connection: bounded by capacity, never by the event rate."""

from __future__ import annotations

import asyncio

import pytest

from face.queue import Closing, Outbound, OutboundQueue, Overflow


def durable(n: int) -> Outbound:
    return Outbound(f"d{n}".encode(), durable_id=n)


def delta(text: str, key: tuple[object, ...] = ("text", "r1", 0)) -> Outbound:
    def merge(later: Outbound) -> Outbound:
        return delta(text + later.payload, key)

    return Outbound(text.encode(), ephemeral=True, key=key, merge=merge, payload=text)


async def drain(queue: OutboundQueue) -> list[bytes]:
    bodies = []
    while len(queue):
        item = await queue.get()
        assert isinstance(item, Outbound)
        bodies.append(item.body)
    return bodies


async def test_deltas_of_one_step_coalesce_at_the_tail() -> None:
    queue = OutboundQueue(capacity=8)
    for part in ("Hel", "lo", " world"):
        assert queue.offer(delta(part))
    assert await drain(queue) == [b"Hello world"]
    assert queue.stats.coalesced == 2


async def test_deltas_never_coalesce_across_a_durable_event() -> None:
    queue = OutboundQueue(capacity=8)
    queue.offer(delta("a"))
    queue.put(durable(1))
    queue.offer(delta("b"))
    assert await drain(queue) == [b"a", b"d1", b"b"]


async def test_ephemeral_frames_are_dropped_under_pressure() -> None:
    queue = OutboundQueue(capacity=8)
    for n in range(queue.pressure_mark):
        queue.put(durable(n + 1))
    assert not queue.offer(delta("late", key=("text", "r2", 0)))
    assert queue.stats.dropped == 1
    assert len(queue) == queue.pressure_mark


async def test_a_durable_event_evicts_ephemeral_frames_before_overflowing() -> None:
    queue = OutboundQueue(capacity=8)
    queue.offer(delta("x", key=("a",)))
    for n in range(7):
        queue.put(durable(n + 1))
    queue.put(durable(8))
    bodies = await drain(queue)
    assert bodies == [f"d{n}".encode() for n in range(1, 9)]


async def test_a_durable_event_that_does_not_fit_overflows() -> None:
    queue = OutboundQueue(capacity=8)
    for n in range(8):
        queue.put(durable(n + 1))
    with pytest.raises(Overflow):
        queue.put(durable(9))
    assert len(queue) == 8


async def test_queue_memory_stays_within_capacity_whatever_the_event_rate() -> None:
    queue = OutboundQueue(capacity=16)
    for n in range(10_000):
        queue.offer(delta(str(n), key=("progress", n)))
        try:
            queue.put(durable(n + 1))
        except Overflow:
            pass
    assert len(queue) == 16
    assert queue.stats.high_water == 16


async def test_close_discards_queued_frames_and_ends_with_the_status() -> None:
    queue = OutboundQueue(capacity=8)
    queue.put(durable(1))
    queue.close(Closing("RESOURCE_EXHAUSTED", "resync required", resync=True))
    queue.put(durable(2))
    item = await queue.get()
    assert item == Closing("RESOURCE_EXHAUSTED", "resync required", resync=True)


async def test_finish_ends_after_the_queued_frames() -> None:
    queue = OutboundQueue(capacity=8)
    queue.put(durable(1))
    queue.finish(Closing("OK", "done"))
    assert (await queue.get()).body == b"d1"
    assert await queue.get() == Closing("OK", "done")


async def test_put_wait_waits_for_room_instead_of_overflowing() -> None:
    queue = OutboundQueue(capacity=8)
    for n in range(8):
        queue.put(durable(n + 1))
    waiting = asyncio.create_task(queue.put_wait(durable(9)))
    await asyncio.sleep(0)
    assert not waiting.done()
    await queue.get()
    await asyncio.wait_for(waiting, 5)
    assert len(queue) == 8
