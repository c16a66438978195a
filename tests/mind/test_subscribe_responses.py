"""Mind.Subscribe's responses: with and without `batches`, every durable event once, in order."""

from __future__ import annotations

import asyncio

import pytest

import mind.api.subscribe_responses as responses_module
from mind.api.subscribe_responses import MAX_EVENTS, subscribe_responses
from mind.events.bus import EphemeralEvent, EventBus
from mind.events.subscription import subscribe_batches
from mind.store.database import Database
from tobe.v1 import events_pb2, mind_pb2

REPLAYED = 150
LIVE = 90


def _bus(database: Database) -> EventBus:
    bus = EventBus()
    database.on_commit(bus.durable_committed)
    return bus


async def _revoke(database: Database, index: int) -> None:
    await database.write(
        lambda tx: tx.event(
            "credential_revoked", "", ["alice"], {"credential_id": f"c{index}", "principal": "bob"}
        )
    )


async def _write_together(database: Database, bus: EventBus, first: int, count: int) -> None:
    """`count` writes at once (so commits group them), a delta published among them."""
    writes = [_revoke(database, index) for index in range(first, first + count)]
    bus.publish(EphemeralEvent("text_delta", "p_x", ("alice",), "run", text="d"))
    await asyncio.gather(*writes)


def _events(response: mind_pb2.SubscribeResponse) -> list[events_pb2.Event]:
    return [response.event, *response.more] if response.HasField("event") else []


async def _read(
    database: Database, bus: EventBus, batched: bool, until: int, replayed: asyncio.Event
) -> list[mind_pb2.SubscribeResponse]:
    """The responses up to the one carrying durable id `until`."""
    read: list[mind_pb2.SubscribeResponse] = []
    batches = subscribe_batches(database, bus, 0, include_ephemeral=True)
    async for response in subscribe_responses(batches, None, batched):
        read.append(response)
        if response.HasField("replay_done"):
            replayed.set()
        if any(event.durable_id >= until for event in _events(response)):
            break
    return read


def _durable_ids(read: list[mind_pb2.SubscribeResponse]) -> list[int]:
    return [event.durable_id for r in read for event in _events(r) if event.durable_id > 0]


async def test_batched_and_single_event_responses_deliver_every_durable_event_once_in_order(
    database: Database,
):
    bus = _bus(database)
    for index in range(REPLAYED):
        await _revoke(database, index)
    total = REPLAYED + LIVE
    replayed = [asyncio.Event(), asyncio.Event()]
    readers = [
        asyncio.create_task(_read(database, bus, batched, total, ready))
        for batched, ready in zip((True, False), replayed, strict=True)
    ]
    async with asyncio.timeout(30):
        for ready in replayed:
            await ready.wait()
        for first in range(REPLAYED, total, 10):
            await _write_together(database, bus, first, 10)
        batched, single = await asyncio.gather(*readers)

    assert _durable_ids(batched) == _durable_ids(single) == list(range(1, total + 1))
    assert all(not response.more for response in single)
    assert max(len(_events(response)) for response in batched) > 1
    # The replay's 150 events need three responses of at most MAX_EVENTS, not 150.
    replay_end = next(i for i, r in enumerate(batched) if r.HasField("replay_done"))
    assert replay_end == -(-REPLAYED // MAX_EVENTS)
    assert batched[replay_end].replay_done.last_durable_id == REPLAYED
    assert all(len(_events(response)) <= MAX_EVENTS for response in batched)


async def test_a_batched_response_holds_no_more_bytes_than_its_limit_unless_one_event_does(
    database: Database, monkeypatch: pytest.MonkeyPatch
):
    bus = _bus(database)
    for index in range(20):
        await _revoke(database, index)
    one_event = (await _read(database, bus, False, 1, asyncio.Event()))[0].event.ByteSize()
    # Room for three events (their sizes differ by a few bytes), never for four.
    monkeypatch.setattr(responses_module, "MAX_BYTES", one_event * 3 + one_event // 2)
    read = await asyncio.wait_for(_read(database, bus, True, 20, asyncio.Event()), 30)

    assert _durable_ids(read) == list(range(1, 21))
    assert [len(_events(response)) for response in read] == [3, 3, 3, 3, 3, 3, 2]
