"""A subscriber's merged stream: outbox replay, a replay-done marker, then live events.

No gap and no duplicate: the subscriber registers on the bus *before* reading the replay, so
a commit during the replay leaves a notification behind. Rows handed over by the bus are used
only when they continue the stream exactly (id = last + 1); anything else, and every wakeup
without rows (a poll, or a writer that passed none), reads the outbox for ids above the last
one delivered. So each event is delivered once, whichever path finds it.

Ephemeral events keep their place among the durable ones: each comes after the durable events
committed before it was published and before those committed after, even when a read of the
outbox (which may see commits newer than a waiting delta) is what delivers them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

from mind.errors import InvalidInput, WrongState
from mind.events.bus import EphemeralEvent, EventBus, Heard
from mind.store.database import Database
from mind.store.models import OutboxEvent
from mind.store.outbox import oldest_event_id, read_events

PAGE = 500
POLL_SECONDS = 1.0


class SnapshotRequired(WrongState):
    """The resume point is older than the oldest event kept."""


class InvalidCursor(InvalidInput):
    """The resume point is not an event id (it is negative)."""


@dataclass(frozen=True)
class ReplayDone:
    last_durable_id: int


Item = OutboxEvent | EphemeralEvent | ReplayDone


async def _page(database: Database, after_id: int) -> list[OutboxEvent]:
    return await database.read(lambda session: read_events(session, after_id, PAGE))


async def _read_from(database: Database, after_id: int) -> AsyncIterator[OutboxEvent]:
    while page := await _page(database, after_id):
        for event in page:
            yield event
        after_id = page[-1].id
        if len(page) < PAGE:
            return


def _published_before(held: deque[Heard], durable_id: int) -> Iterator[EphemeralEvent]:
    """The held ephemeral events published before durable event `durable_id` was committed
    (in publishing order, so the bus's watermarks only grow along `held`)."""
    while held and held[0][0] < durable_id:
        yield held.popleft()[1]


async def _check_resumable(database: Database, after_id: int) -> None:
    oldest = await database.read(oldest_event_id)
    if after_id < 0:
        raise InvalidCursor("after_id cannot be negative")
    if oldest is not None and after_id + 1 < oldest:
        raise SnapshotRequired(
            f"snapshot required: events after {after_id} were pruned (oldest kept: {oldest})"
        )


async def subscribe(
    database: Database,
    bus: EventBus,
    after_id: int,
    include_ephemeral: bool,
) -> AsyncIterator[Item]:
    """Durable events with id > after_id, ReplayDone, then live events until the bus closes."""
    subscription = bus.subscribe(include_ephemeral)
    try:
        await _check_resumable(database, after_id)
        last = after_id
        async for event in _read_from(database, last):
            yield event
            last = event.id
        yield ReplayDone(last)
        held: deque[Heard] = deque()
        while not subscription.closed:
            await subscription.wait(POLL_SECONDS)
            heard = subscription.take_ephemeral()
            held.extend(heard)
            rows, must_read = subscription.take_durable()
            for row in rows:
                if row.id <= last:
                    continue
                if row.id != last + 1:
                    must_read = True  # a gap: another writer's rows, or a skipped id
                    break
                for ephemeral in _published_before(held, row.id):
                    yield ephemeral
                yield row
                last = row.id
            if must_read or not (rows or heard):  # a gap, a bare notice, or a poll
                async for event in _read_from(database, last):
                    held.extend(subscription.take_ephemeral())  # published during the read
                    for ephemeral in _published_before(held, event.id):
                        yield ephemeral
                    yield event
                    last = event.id
            # What was published after the last durable event delivered; a delta published
            # after a commit not delivered yet waits for it (the bus has already said "read").
            for ephemeral in _published_before(held, last + 1):
                yield ephemeral
    finally:
        subscription.close()
