"""A subscription's items → `Mind.Subscribe` responses, one event each or several together.

A gateway that asks for `batches` gets the events that became ready together (one commit's
events, a replay page, what one wakeup found) in one response: `event` first, then `more`, in
stream order. Each stream write has a fixed cost in the Mind (tens of microseconds of CPU), so
a turn's events then cost about one write per commit instead of one each. A response stays well under the
message size limit: it takes at most MAX_EVENTS events and MAX_BYTES of them (a single larger
event still goes alone, as it would unbatched). ReplayDone always has a response of its own.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterable

from mind.api.events import durable_event, ephemeral_event
from mind.events.bus import EphemeralEvent
from mind.events.subscription import Item, ReplayDone
from mind.sealing.keyring import KeyRing
from tobe.v1 import events_pb2, mind_pb2

MAX_EVENTS = 64
MAX_BYTES = 1024 * 1024


def _event(item: Item, keyring: KeyRing | None) -> events_pb2.Event:
    if isinstance(item, EphemeralEvent):
        return ephemeral_event(item)
    assert not isinstance(item, ReplayDone)
    return durable_event(item, keyring)


def _replay_done(item: ReplayDone) -> mind_pb2.SubscribeResponse:
    return mind_pb2.SubscribeResponse(
        replay_done=mind_pb2.ReplayDone(last_durable_id=item.last_durable_id)
    )


def _grouped(events: Iterable[events_pb2.Event]) -> Iterable[mind_pb2.SubscribeResponse]:
    """Consecutive events in responses of at most MAX_EVENTS events and MAX_BYTES."""
    response: mind_pb2.SubscribeResponse | None = None
    size = count = 0
    for event in events:
        event_size = event.ByteSize()
        if response is not None and (count >= MAX_EVENTS or size + event_size > MAX_BYTES):
            yield response
            response = None
        if response is None:
            response = mind_pb2.SubscribeResponse(event=event)
            size, count = event_size, 1
        else:
            response.more.append(event)
            size, count = size + event_size, count + 1
    if response is not None:
        yield response


async def subscribe_responses(
    batches: AsyncIterator[list[Item]], keyring: KeyRing | None, batched: bool
) -> AsyncGenerator[mind_pb2.SubscribeResponse, None]:
    """The responses for `batches` (from `subscribe_batches`): grouped when `batched`, else one
    event per response as gateways that do not read `more` expect."""
    async for batch in batches:
        if len(batch) == 1 and isinstance(batch[0], ReplayDone):
            yield _replay_done(batch[0])
        elif batched and len(batch) > 1:
            for response in _grouped(_event(item, keyring) for item in batch):
                yield response
        else:
            for item in batch:
                yield mind_pb2.SubscribeResponse(event=_event(item, keyring))
