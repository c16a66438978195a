"""The event feed tells every connection when its link to the Mind drops and when it is back:
once per change, however many attempts fail in between, and a connection that opens while the
link is down learns it right after its welcome (end to end: tests/face/test_chat_connection_e2e.py
and tests/web/test_web_session_e2e.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator

from face.connection import Connection, Identity
from face.errors import MindCallError
from face.feed import EventFeed
from face.projection import SUMMARY, AdmissionModes
from face.queue import Outbound
from face.session import Session
from tobe.config import FaceSettings
from tobe.runtime.backoff import Backoff
from tobe.v1 import events_pb2, face_pb2, mind_pb2

ALICE = Identity("alice", ("chat",), "cred-a")


class FlakyMind:
    """A Mind whose subscriptions go live, then fail `failures` times, then go live again."""

    address = "mind.example:7410"
    addresses = [address]

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.live_again = asyncio.Event()
        self.answered = asyncio.Event()

    async def subscribe(
        self, after_id: int, *, include_ephemeral: bool, reports_revocations: bool
    ) -> AsyncGenerator[events_pb2.Event | mind_pb2.ReplayDone, None]:
        self.calls += 1
        if 1 < self.calls <= 1 + self.failures:
            raise MindCallError("UNAVAILABLE", "failed to connect to all addresses")
        yield mind_pb2.ReplayDone(last_durable_id=after_id)
        if self.calls > 1:
            self.live_again.set()
            await asyncio.Event().wait()  # stays live
        raise MindCallError("UNAVAILABLE", "the Mind ended the event stream")


async def links(connection: Connection) -> list[face_pb2.MindLink]:
    found = []
    while len(connection.queue):
        item = await connection.queue.get()
        assert isinstance(item, Outbound)
        frame = face_pb2.ConnectResponse.FromString(item.body)
        if frame.HasField("mind_link"):
            found.append(frame.mind_link)
    return found


async def test_each_connection_hears_once_that_the_link_dropped_and_once_that_it_is_back() -> None:
    mind = FlakyMind(failures=3)
    feed = EventFeed(mind, AdmissionModes())  # type: ignore[arg-type]  # only `subscribe`
    feed._backoff = Backoff(initial=0.001, maximum=0.001)
    connection = Connection(ALICE, SUMMARY, 64)
    feed.connections.add(connection)
    running = asyncio.create_task(feed.run())
    try:
        await asyncio.wait_for(mind.live_again.wait(), 10)
    finally:
        running.cancel()
    assert mind.calls == 5
    down, up = await links(connection)
    assert (down.up, down.reason) == (False, "the Face lost its link to the Mind (UNAVAILABLE)")
    assert (up.up, up.reason) == (True, "")
    assert feed.link_down == ""


async def test_a_closed_connection_is_not_told() -> None:
    connection = Connection(ALICE, SUMMARY, 64)
    connection.close("CANCELLED", "the client went away")
    connection.mind_link("the Face lost its link to the Mind (UNAVAILABLE)")
    assert len(connection.queue) == 0


class RecordingSink:
    """A transport that keeps the frames written to it."""

    def __init__(self) -> None:
        self.frames: list[face_pb2.ConnectResponse] = []
        self.two = asyncio.Event()

    async def write(self, seq: int, body: bytes) -> None:
        frame = face_pb2.ConnectResponse.FromString(body)
        frame.seq = seq
        self.frames.append(frame)
        if len(self.frames) >= 2:
            self.two.set()

    async def end(self, code: str, message: str) -> None:
        """Nothing to close."""


async def hello_then_wait() -> AsyncIterator[face_pb2.ConnectRequest]:
    yield face_pb2.ConnectRequest(request_id="hello", hello=face_pb2.Hello(client_name="test"))
    await asyncio.Event().wait()


async def test_a_connection_opened_while_the_link_is_down_is_told_right_after_its_welcome() -> None:
    mind = FlakyMind(failures=0)
    feed = EventFeed(mind, AdmissionModes())  # type: ignore[arg-type]  # only `subscribe`
    feed.link_down = "the Face lost its link to the Mind (UNAVAILABLE)"
    session = Session(mind, feed, FaceSettings())  # type: ignore[arg-type]
    sink = RecordingSink()
    serving = asyncio.create_task(session.run(ALICE, hello_then_wait(), sink))
    try:
        await asyncio.wait_for(sink.two.wait(), 10)
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
    welcome, link = sink.frames[:2]
    assert (welcome.seq, welcome.WhichOneof("frame")) == (1, "welcome")
    assert link.seq == 2 and link.mind_link == face_pb2.MindLink(up=False, reason=feed.link_down)
