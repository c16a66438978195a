"""The in-memory event bus: ephemeral events, and news of committed outbox rows.

Ephemeral events (text and thinking deltas, tool progress) may be dropped: a subscriber whose
buffer is full loses them. Durable events are handed over after their commit as a shortcut
only: a subscriber uses them when they continue its stream without a gap and otherwise reads
the outbox, which stays the source of truth (writers that pass no rows just say "read").
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from mind.events.child_views import ChildView
from mind.store.models import OutboxEvent


@dataclass(frozen=True)
class EphemeralEvent:
    kind: Literal["text_delta", "thinking_delta", "tool_progress"]
    conversation_key: str
    audience: tuple[str, ...]
    run_id: str
    step: int = 0
    text: str = ""
    tool_call_id: str = ""
    # Tool progress: 0..1 when known, negative when unknown.
    fraction: float = -1.0
    # Tool progress of a `delegate` call: its child run's whole current view.
    child: ChildView | None = None
    time: datetime = field(default_factory=lambda: datetime.now(UTC))


# An ephemeral event with the last durable id the bus knew committed when it was published:
# it belongs after that durable event and before any later one.
Heard = tuple[int, EphemeralEvent]


class BusSubscription:
    """One subscriber's view of the bus; `wait()` returns when there is something to do."""

    def __init__(self, bus: EventBus, include_ephemeral: bool, capacity: int) -> None:
        self._bus = bus
        self._include_ephemeral = include_ephemeral
        self._capacity = capacity
        self._items: deque[Heard] = deque()
        self._rows: list[OutboxEvent] = []
        self._must_read = False
        self._wakeup = asyncio.Event()

    def _offer(self, event: EphemeralEvent, after_id: int) -> None:
        if self._include_ephemeral and len(self._items) < self._capacity:
            self._items.append((after_id, event))
            self._wakeup.set()

    def _durable(self, rows: list[OutboxEvent]) -> None:
        if not rows or len(self._rows) + len(rows) > self._capacity:
            self._rows.clear()
            self._must_read = True
        else:
            self._rows.extend(rows)
        self._wakeup.set()

    async def wait(self, timeout: float) -> None:
        """Wait until there is something to do, or `timeout` seconds passed."""
        if self._items or self._rows or self._must_read:
            return
        self._wakeup.clear()
        # `asyncio.wait`, not `wait_for`: on Python 3.11 `wait_for` drops a cancellation that
        # arrives as the wakeup does (a revocation cuts its stream right as its event is
        # published), and the stream would live on.
        woken = asyncio.ensure_future(self._wakeup.wait())
        try:
            await asyncio.wait([woken], timeout=timeout)
        finally:
            woken.cancel()

    def take_durable(self) -> tuple[list[OutboxEvent], bool]:
        """Rows handed over since the last call (by id), and whether to read the outbox."""
        rows, must_read = sorted(self._rows, key=lambda row: row.id), self._must_read
        self._rows, self._must_read = [], False
        return rows, must_read

    def take_ephemeral(self) -> list[Heard]:
        items = list(self._items)
        self._items.clear()
        return items

    @property
    def closed(self) -> bool:
        return self._bus.closed

    def close(self) -> None:
        self._bus._subscriptions.discard(self)


class EventBus:
    def __init__(self, capacity: int = 1024) -> None:
        self._subscriptions: set[BusSubscription] = set()
        self._capacity = capacity
        self._last_durable_id = 0  # the newest outbox id a writer handed over
        self.closed = False
        # Hears each ephemeral event published here, with the durable id it follows (a store
        # other Minds share relays them to those Minds: `mind.events.relay`).
        self.relay: Callable[[Heard], None] | None = None

    def subscribe(self, include_ephemeral: bool) -> BusSubscription:
        subscription = BusSubscription(self, include_ephemeral, self._capacity)
        self._subscriptions.add(subscription)
        return subscription

    @property
    def subscriber_count(self) -> int:
        """Open subscriptions (gateway event streams), for status reports."""
        return len(self._subscriptions)

    def publish(self, event: EphemeralEvent) -> None:
        for subscription in list(self._subscriptions):
            subscription._offer(event, self._last_durable_id)
        if self.relay is not None:
            self.relay((self._last_durable_id, event))

    def heard(self, after_id: int, event: EphemeralEvent) -> None:
        """An ephemeral event another Mind published after its durable event `after_id`."""
        for subscription in list(self._subscriptions):
            subscription._offer(event, after_id)

    def close(self) -> None:
        """End every subscription's live phase (at shutdown), after one last outbox read."""
        self.closed = True
        self.durable_committed()

    def durable_committed(self, rows: Iterable[OutboxEvent] = ()) -> None:
        """Call after a commit that appended outbox rows; pass them when you have them."""
        committed = list(rows)
        if committed:
            self._last_durable_id = max(self._last_durable_id, max(row.id for row in committed))
        for subscription in list(self._subscriptions):
            subscription._durable(committed)
