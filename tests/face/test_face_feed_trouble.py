"""`EventFeed.trouble`, what Face's health says: why the Face cannot serve, "" while its feed
from the Mind is live (end to end: tests/face/test_face_health_e2e.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from face.errors import MindCallError
from face.feed import EventFeed
from face.projection import AdmissionModes
from tobe.runtime.backoff import Backoff
from tobe.v1 import events_pb2, mind_pb2

ADDRESS = "mind.example:7421"


class ScriptedMind:
    """A Mind whose successive subscriptions fail with the scripted statuses, then go live."""

    address = ADDRESS
    addresses = [ADDRESS]

    def __init__(self, *failures: str) -> None:
        self.failures = list(failures)
        self.go_on = asyncio.Event()
        self.answered = asyncio.Event()

    async def subscribe(
        self, after_id: int, *, include_ephemeral: bool, reports_revocations: bool
    ) -> AsyncGenerator[events_pb2.Event | mind_pb2.ReplayDone, None]:
        await self.go_on.wait()
        self.go_on.clear()
        if self.failures:
            code = self.failures.pop(0)
            raise MindCallError(code, "invalid, revoked or expired credential")
        yield mind_pb2.ReplayDone(last_durable_id=after_id)
        await asyncio.Event().wait()  # stays live


async def next_trouble(feed: EventFeed, mind: ScriptedMind) -> str:
    """Let the feed make one more subscription attempt; the trouble it then reports."""
    feed.trouble_changed.clear()
    mind.go_on.set()
    await asyncio.wait_for(feed.trouble_changed.wait(), 10)
    return feed.trouble


async def test_the_feed_says_it_is_connecting_then_why_the_mind_is_unreachable_then_nothing() -> (
    None
):
    mind = ScriptedMind("UNAVAILABLE")
    feed = EventFeed(mind, AdmissionModes())  # type: ignore[arg-type]  # only `subscribe`
    feed._backoff = Backoff(initial=0.001, maximum=0.001)
    assert feed.trouble == f"the Face is connecting to the Mind at {ADDRESS}"
    running = asyncio.create_task(feed.run())
    try:
        assert await next_trouble(feed, mind) == (
            f"the Face cannot reach the Mind at {ADDRESS} (UNAVAILABLE)"
        )
        assert await next_trouble(feed, mind) == ""
    finally:
        running.cancel()


async def test_a_refused_gateway_credential_is_the_trouble_until_the_feed_is_live_again() -> None:
    mind = ScriptedMind("UNAUTHENTICATED", "PERMISSION_DENIED")
    feed = EventFeed(mind, AdmissionModes())  # type: ignore[arg-type]  # only `subscribe`
    feed._backoff = Backoff(initial=0.001, maximum=0.001)
    running = asyncio.create_task(feed.run())
    refused = (
        "the Face's own credential was refused (invalid, revoked or expired credential): "
        "an operator must replace it"
    )
    try:
        assert await next_trouble(feed, mind) == refused
        # Missing the `gateway` scope is a refusal of the Face's credential too.
        assert await next_trouble(feed, mind) == refused
        assert await next_trouble(feed, mind) == ""
    finally:
        running.cancel()
