"""Ephemeral events between Minds that share one PostgreSQL database.

Text and thinking deltas and tool progress never reach the store, so a subscriber of one Mind
would not see another Mind's runs stream. Each Mind therefore sends what its bus publishes as
a NOTIFY on `tobe_live` (`Relay.send`, on a connection of its own, in order), and the others'
membership connection hears it (`Relay.heard`) and offers it to their own subscribers after
the durable event the sender had seen. Each write of this Mind's store first waits for the
events published before it to be sent (`Relay.drained`), and PostgreSQL delivers notifications
in commit order, so another Mind hears a reply's deltas before the commit of its message, and
they keep their place among durable events there too. A NOTIFY payload holds at most 8000
bytes: a longer text delta goes as several, and a child run's view (`delegate` progress)
leaves out its oldest calls until it fits.

Like every ephemeral event, a relayed one may be lost (the queue full, the connection down):
the stored message that follows is the truth.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from datetime import datetime

import psycopg

from mind.events.bus import EphemeralEvent, EventBus, Heard
from mind.events.child_views import ChildView

log = logging.getLogger(__name__)

LIVE_CHANNEL = "tobe_live"
# Bytes of delta text per notification, well under PostgreSQL's 8000-byte payload limit.
TEXT_BYTES = 6000
# Bytes of a child run's view per notification (its event carries no text).
CHILD_BYTES = 7000
QUEUE = 4096
# Events sent in one round trip.
BATCH = 256
# How long a write waits for the events before it to be sent, when the relay is slow or down.
SETTLE_SECONDS = 1.0


def encode(node_id: str, serial: int, after_id: int, event: EphemeralEvent) -> list[str]:
    """The notification payloads of one event (several for a long text). `serial` keeps two
    equal events apart: PostgreSQL delivers equal payloads of one transaction once."""
    texts = _split(event.text) if event.text else [""]
    return [
        json.dumps(
            {
                "node": node_id,
                "serial": serial,
                "after": after_id,
                "kind": event.kind,
                "key": event.conversation_key,
                "audience": list(event.audience),
                "run": event.run_id,
                "step": event.step,
                "text": text,
                "call": event.tool_call_id,
                "fraction": event.fraction,
                "time": event.time.isoformat(),
                "child": _fitting(event.child) if event.child is not None else None,
            },
            separators=(",", ":"),
        )
        for text in texts
    ]


def decode(payload: str) -> tuple[str, int, EphemeralEvent]:
    """The sender's node id, the durable id it had seen, and the event."""
    data = json.loads(payload)
    event = EphemeralEvent(
        kind=data["kind"],
        conversation_key=data["key"],
        audience=tuple(data["audience"]),
        run_id=data["run"],
        step=data["step"],
        text=data["text"],
        tool_call_id=data["call"],
        fraction=data["fraction"],
        child=ChildView.from_payload(data["child"]) if data.get("child") else None,
        time=datetime.fromisoformat(data["time"]),
    )
    return data["node"], data["after"], event


def _fitting(view: ChildView) -> dict[str, object]:
    """The view's payload, its oldest calls (then its text) left out until it fits."""
    payload = view.to_payload()
    while len(json.dumps(payload)) > CHILD_BYTES and (payload["calls"] or payload["text"]):
        if payload["calls"]:
            payload["calls"] = payload["calls"][1:]
        else:
            payload["text"] = ""
    return payload


def _split(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for character in text:
        length = len(character.encode())
        if size + length > TEXT_BYTES:
            parts.append("".join(current))
            current, size = [], 0
        current.append(character)
        size += length
    parts.append("".join(current))
    return parts


class Relay:
    """Sends this Mind's ephemeral events to the others, and offers theirs to its bus."""

    def __init__(self, url: str, node_id: str, bus: EventBus) -> None:
        self.url = url
        self.node_id = node_id
        self.bus = bus
        self._queue: asyncio.Queue[Heard] = asyncio.Queue(QUEUE)
        self._idle = asyncio.Event()
        self._idle.set()
        self._serial = 0
        self._connection: psycopg.AsyncConnection[tuple[object, ...]] | None = None
        self._task: asyncio.Task[None] | None = None

    def send(self, heard: Heard) -> None:
        """Queue an event this Mind published (dropped when the queue is full)."""
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(heard)
            self._idle.clear()

    async def drained(self) -> None:
        """Return once the events queued so far are sent (or after `SETTLE_SECONDS`)."""
        if not self._idle.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), SETTLE_SECONDS)

    def heard(self, payload: str) -> None:
        """A notification on `LIVE_CHANNEL`: another Mind's event, offered to this bus."""
        node_id, after_id, event = decode(payload)
        if node_id != self.node_id:
            self.bus.heard(after_id, event)

    async def start(self) -> None:
        """Connect now, so that the first run's events do not wait for it."""
        try:
            await self._connected()
        except psycopg.Error as exc:
            log.warning("the relay to the other Minds will connect later: %s", exc)
        self.bus.relay = self.send
        self._task = asyncio.create_task(self._sending(), name="live-relay")

    async def close(self) -> None:
        self.bus.relay = None
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._connection is not None:
            await self._connection.close()

    async def _connected(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        if self._connection is None or self._connection.closed:
            self._connection = await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=5
            )
        return self._connection

    async def _sending(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                payloads = []
                for after_id, event in batch:
                    self._serial += 1
                    payloads.extend(encode(self.node_id, self._serial, after_id, event))
                connection = await self._connected()
                async with connection.cursor() as cursor:
                    await cursor.executemany(
                        "SELECT pg_notify(%s, %s)", [(LIVE_CHANNEL, p) for p in payloads]
                    )
            except psycopg.Error as exc:
                log.debug("%d ephemeral events were not relayed: %s", len(batch), exc)
                self._connection = None
            finally:
                if self._queue.empty():
                    self._idle.set()
