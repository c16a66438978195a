"""The feed of a Face given several Minds: it redials a Mind whose stream broke once, then moves
on to the next, resubscribing after the last durable id it delivered (end to end, on
PostgreSQL: tests/face/test_face_failover_e2e.py); a call the Mind answers ends its backoff."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from face import feed as feed_module
from face.errors import MindCallError
from face.feed import EventFeed
from face.projection import AdmissionModes
from tobe.runtime.backoff import Backoff
from tobe.v1 import events_pb2, mind_pb2

FIRST, SECOND = "mind-a.example:7410", "mind-b.example:7410"


class TwoMinds:
    """Two Minds on one database: each delivers the events after the subscriber's cursor up to
    `newest`; `down` ones refuse connections, and bringing one down breaks its stream."""

    addresses = [FIRST, SECOND]

    def __init__(self, newest: int) -> None:
        self.newest = newest
        self.current = 0
        self.down: set[str] = set()
        self.dials: list[str] = []
        self.subscriptions: list[tuple[str, int]] = []
        self.broken = asyncio.Event()
        self.resumed = asyncio.Event()
        # Set when a client's call is answered (`MindClient.answered`).
        self.answered = asyncio.Event()

    @property
    def address(self) -> str:
        return self.addresses[self.current]

    def fail_over(self) -> bool:
        self.current = (self.current + 1) % len(self.addresses)
        return True

    async def dial(self, patience: float) -> None:
        self.dials.append(self.address)
        if self.address in self.down:
            raise MindCallError("UNAVAILABLE", "Connection refused")

    def kill(self, address: str) -> None:
        self.down.add(address)
        self.broken.set()

    async def subscribe(
        self, after_id: int, *, include_ephemeral: bool, reports_revocations: bool
    ) -> AsyncGenerator[events_pb2.Event | mind_pb2.ReplayDone, None]:
        address = self.address
        self.subscriptions.append((address, after_id))
        for durable_id in range(after_id + 1, self.newest + 1):
            yield events_pb2.Event(durable_id=durable_id)
        yield mind_pb2.ReplayDone(last_durable_id=self.newest)
        if len(self.subscriptions) > 1:
            self.resumed.set()
        await self.broken.wait()
        self.broken.clear()
        raise MindCallError("UNAVAILABLE", "Socket closed")


async def test_a_broken_stream_is_redialled_once_then_the_next_mind_resumes_after_the_last_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feed_module, "DIAL_PATIENCE", 0.0)  # any live stream lived long enough
    minds = TwoMinds(newest=5)
    feed = EventFeed(minds, AdmissionModes())  # type: ignore[arg-type]  # the calls it makes
    feed._backoff = Backoff(initial=60, maximum=60)  # a whole round failing would stall here
    running = asyncio.create_task(feed.run())
    try:
        await asyncio.wait_for(feed.live.wait(), 10)
        minds.newest = 8  # written by the first Mind just before it died, or by the second
        minds.kill(FIRST)
        await asyncio.wait_for(minds.resumed.wait(), 10)
        assert minds.dials == [FIRST, FIRST, SECOND]
        assert minds.subscriptions == [(FIRST, 0), (SECOND, 5)]
        assert feed.last_id == 8 and feed.live.is_set()
    finally:
        running.cancel()


class WatchedBackoff(Backoff):
    """A long backoff that says when it is first asked for."""

    def __init__(self) -> None:
        super().__init__(initial=60, maximum=60)
        self.asked = asyncio.Event()

    def next_delay(self) -> float:
        self.asked.set()
        return super().next_delay()


async def test_the_backoff_waits_only_after_every_mind_was_tried() -> None:
    minds = TwoMinds(newest=0)
    minds.down = {FIRST, SECOND}
    feed = EventFeed(minds, AdmissionModes())  # type: ignore[arg-type]  # the calls it makes
    backoff = feed._backoff = WatchedBackoff()
    running = asyncio.create_task(feed.run())
    try:
        await asyncio.wait_for(backoff.asked.wait(), 10)
        assert minds.dials == [FIRST, SECOND]
        # Round-robin: the next round starts again with the first Mind.
        assert minds.address == FIRST
        assert feed.trouble == f"the Face cannot reach the Mind at {FIRST} (UNAVAILABLE)"
    finally:
        running.cancel()


async def test_a_call_answered_during_the_backoff_brings_the_feed_back_at_once() -> None:
    minds = TwoMinds(newest=3)
    minds.down = {FIRST, SECOND}
    feed = EventFeed(minds, AdmissionModes())  # type: ignore[arg-type]  # the calls it makes
    backoff = feed._backoff = WatchedBackoff()  # 60 s: the test would time out waiting it out
    running = asyncio.create_task(feed.run())
    try:
        await asyncio.wait_for(backoff.asked.wait(), 10)
        minds.down.clear()  # the Mind is back, and a client's call was just answered
        minds.answered.set()
        await asyncio.wait_for(feed.live.wait(), 10)
        assert feed.last_id == 3
    finally:
        running.cancel()
