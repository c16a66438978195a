"""The bounded outbound queue of one client connection.

Memory per connection is bounded by the capacity, never by the event rate:

* ephemeral frames (text/thinking deltas, tool progress) are coalesced with the frame at the
  tail when they continue it, admitted only while the queue is below its pressure mark, and
  evicted first when a frame that must be delivered needs room;
* must-deliver frames (durable events, command replies) are never dropped: when one does not
  fit, `put` raises `Overflow` and the connection is closed with a resync request;
* `close` empties the queue and leaves one final `Closing` item for the writer.

Sequence numbers are not assigned here: the writer numbers frames as it sends them, so dropped
or coalesced frames never leave a gap.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tobe.telemetry import instruments


class Overflow(Exception):
    """A must-deliver frame did not fit; the connection must resync."""


@dataclass
class Outbound:
    """One frame waiting to be written.

    `body` is the serialized frame without its `seq` (shared between connections that see the
    same bytes); `merge` is set on ephemeral frames that may absorb a later frame with the same
    `key` (text deltas of one run step); `durable_id` is > 0 for durable events.
    """

    body: bytes
    durable_id: int = 0
    ephemeral: bool = False
    key: tuple[object, ...] | None = None
    merge: Callable[[Outbound], Outbound | None] | None = None
    # What `merge` needs from a later frame (e.g. the delta's text).
    payload: Any = None


@dataclass
class Closing:
    """The last item of a connection: the status to end with, and whether to send a resync."""

    code: str
    message: str
    resync: bool = False


@dataclass
class QueueStats:
    high_water: int = 0
    dropped: int = 0
    coalesced: int = 0


@dataclass
class OutboundQueue:
    capacity: int
    stats: QueueStats = field(default_factory=QueueStats)

    def __post_init__(self) -> None:
        self._items: deque[Outbound] = deque()
        self._closing: Closing | None = None
        self._readable = asyncio.Event()
        self._space = asyncio.Event()
        self._space.set()
        # Ephemeral frames stop being admitted here, keeping room for durable ones.
        self.pressure_mark = max(1, self.capacity * 3 // 4)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def closed(self) -> bool:
        return self._closing is not None

    @property
    def closing(self) -> Closing | None:
        return self._closing

    def put(self, item: Outbound) -> None:
        """Queue a must-deliver frame; raises Overflow when it cannot fit even after eviction."""
        if self._closing is not None:
            return
        if len(self._items) >= self.capacity and not self._evict_ephemeral():
            raise Overflow(f"outbound queue full ({self.capacity} frames)")
        self._append(item)

    def offer(self, item: Outbound) -> bool:
        """Queue an ephemeral frame if there is room; returns False when it was dropped."""
        if self._closing is not None:
            return False
        tail = self._items[-1] if self._items else None
        if tail is not None and tail.merge is not None and tail.key == item.key:
            merged = tail.merge(item)
            if merged is not None:
                self._items[-1] = merged
                self.stats.coalesced += 1
                return True
        if len(self._items) >= self.pressure_mark:
            self.stats.dropped += 1
            instruments.face_drops.add(1)
            return False
        self._append(item)
        return True

    async def put_wait(self, item: Outbound) -> None:
        """Queue a must-deliver frame, waiting for room (for replays, which can be paced)."""
        while self._closing is None and len(self._items) >= self.capacity:
            self._space.clear()
            await self._space.wait()
        self.put(item)

    def close(self, closing: Closing) -> None:
        """Drop everything still queued; the writer sends only the closing status next."""
        if self._closing is not None:
            return
        if closing.resync:
            instruments.face_resyncs.add(1)
        self._items.clear()
        self._closing = closing
        self._readable.set()
        self._space.set()

    def finish(self, closing: Closing) -> None:
        """End after the frames already queued are written (a clean close)."""
        if self._closing is None:
            self._closing = closing
            self._readable.set()

    async def get(self) -> Outbound | Closing:
        while not self._items:
            if self._closing is not None:
                return self._closing
            self._readable.clear()
            await self._readable.wait()
        item = self._items.popleft()
        if len(self._items) < self.capacity:
            self._space.set()
        return item

    def _append(self, item: Outbound) -> None:
        instruments.face_queue_depth.record(len(self._items))
        self._items.append(item)
        self.stats.high_water = max(self.stats.high_water, len(self._items))
        self._readable.set()

    def _evict_ephemeral(self) -> bool:
        for index, queued in enumerate(self._items):
            if queued.ephemeral:
                del self._items[index]
                self.stats.dropped += 1
                instruments.face_drops.add(1)
                return True
        return False
