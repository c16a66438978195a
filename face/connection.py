"""One client connection: identity, detail mode, outbound queue and event cursor.

Event delivery has two phases per subscription:

1. catch-up: the durable events the client missed come from a private replay stream of the
   Mind (paced by the client: `put_wait`); meanwhile live durable events from the shared feed
   are parked in a bounded pending list and ephemeral ones are dropped;
2. live: events from the shared feed go straight to the queue.

`cursor` is the highest durable id handled for this connection; since durable ids only grow in
visibility order, skipping ids at or below it removes every overlap between the replay, the
parked events and the live feed. A durable event that does not fit closes the connection with
a resync request naming the last durable id actually written.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from face.projection import AdmissionModes, effective_mode, project_event
from face.queue import Closing, Outbound, OutboundQueue, Overflow
from tobe.scopes import ADMIN
from tobe.v1 import events_pb2, face_pb2, mind_pb2

RESYNC_REQUIRED = "resync required"
_ids = itertools.count(1)


@dataclass(frozen=True)
class Identity:
    """The authenticated client principal (from Mind.Authenticate)."""

    principal: str
    scopes: tuple[str, ...]
    credential_id: str

    @property
    def admin(self) -> bool:
        return ADMIN in self.scopes

    def can_see(self, event: events_pb2.Event) -> bool:
        if not event.audience:
            return False  # system events are for the gateway itself
        return self.admin or self.principal in event.audience


class RenderedEvent:
    """An event with its frame bytes per detail mode, rendered once and shared by connections."""

    __slots__ = ("event", "_modes", "_bodies")

    def __init__(self, event: events_pb2.Event, modes: AdmissionModes) -> None:
        self.event = event
        self._modes = modes
        self._bodies: dict[int, Outbound | None] = {}

    def outbound(self, viewer: int) -> Outbound | None:
        """The queue item for a viewer in this mode; None when the mode hides the event."""
        if viewer not in self._bodies:
            shown = project_event(self.event, viewer, self._modes)
            self._bodies[viewer] = None if shown is None else _event_outbound(shown)
        return self._bodies[viewer]


def _event_outbound(event: events_pb2.Event) -> Outbound:
    body = face_pb2.ConnectResponse(event=event).SerializeToString()
    if event.durable_id > 0:
        return Outbound(body, durable_id=event.durable_id)
    kind = event.WhichOneof("payload")
    if kind in ("text_delta", "thinking_delta"):
        delta = getattr(event, kind)
        key: tuple[object, ...] = (kind, event.conversation_key, delta.run_id, delta.step)
        return Outbound(
            body, ephemeral=True, key=key, merge=_merge_delta(event, kind), payload=event
        )
    if kind == "tool_progress":
        key = ("progress", event.tool_progress.tool_call_id)
        return Outbound(body, ephemeral=True, key=key, merge=_newer, payload=event)
    return Outbound(body, ephemeral=True)


def _merge_delta(event: events_pb2.Event, kind: str) -> Callable[[Outbound], Outbound]:
    """Merges a later frame's `kind` delta into this frame's one (`event`, the tail)."""

    def merge(later: Outbound) -> Outbound:
        combined = events_pb2.Event()
        combined.CopyFrom(event)
        getattr(combined, kind).text += getattr(later.payload, kind).text
        return _event_outbound(combined)

    return merge


def _newer(later: Outbound) -> Outbound:
    return later


class Phase(Enum):
    IDLE = "idle"
    CATCHING_UP = "catching up"
    LIVE = "live"


class Connection:
    def __init__(self, identity: Identity, detail_mode: int, capacity: int) -> None:
        self.id = f"c{next(_ids)}"
        self.identity = identity
        self.mode = effective_mode(detail_mode)
        self.queue = OutboundQueue(capacity)
        self.phase = Phase.IDLE
        self.cursor = 0
        # Highest durable id written to the client (what a resync tells it to resume after).
        self.written_durable_id = 0
        self._catch_up_target = 0
        self._pending: list[RenderedEvent] = []

    # -- frames -------------------------------------------------------------------------------

    def send(self, response: face_pb2.ConnectResponse) -> None:
        """Queue a must-deliver frame (welcome, reply)."""
        self._put(Outbound(response.SerializeToString()))

    def reply(self, reply: face_pb2.Reply) -> None:
        self.send(face_pb2.ConnectResponse(reply=reply))

    def reply_error(self, request_id: str, code: int, message: str) -> None:
        error = face_pb2.CommandError(code=code, message=message)
        self.reply(face_pb2.Reply(request_id=request_id, error=error))

    def mind_link(self, down: str) -> None:
        """Tell the client the gateway's link to the Mind went down (`down` says why) or is
        back ("")."""
        if not self.queue.closed:
            link = face_pb2.MindLink(up=not down, reason=down)
            self.send(face_pb2.ConnectResponse(mind_link=link))

    def close(self, code: str, message: str, *, resync: bool = False) -> None:
        self.queue.close(Closing(code, message, resync=resync))

    def describe_end(self) -> str:
        """One log line about how the connection ended and what its queue went through."""
        closing = self.queue.closing
        how = f"{closing.code} {closing.message}" if closing else "open"
        stats = self.queue.stats
        return (
            f"connection {self.id} ({self.identity.principal}) closed: {how}; queue high water "
            f"{stats.high_water} of {self.queue.capacity}, {stats.dropped} dropped, "
            f"{stats.coalesced} coalesced"
        )

    def _put(self, item: Outbound) -> None:
        try:
            self.queue.put(item)
        except Overflow:
            self.close("RESOURCE_EXHAUSTED", RESYNC_REQUIRED, resync=True)

    # -- subscription -------------------------------------------------------------------------

    def begin_catch_up(self, after_id: int, feed_position: int) -> None:
        """Start a (re)subscription: park live events until the replay reaches the feed."""
        self.phase = Phase.CATCHING_UP
        self.cursor = after_id
        self.written_durable_id = max(self.written_durable_id, after_id)
        self._catch_up_target = feed_position
        self._pending = []

    def caught_up(self, replay_done: bool) -> bool:
        return replay_done and self.cursor >= self._catch_up_target

    async def replay(self, rendered: RenderedEvent) -> None:
        """Queue one replayed durable event, waiting for room rather than overflowing."""
        durable_id = rendered.event.durable_id
        if durable_id <= self.cursor:
            return
        self.cursor = durable_id
        if self.identity.can_see(rendered.event):
            item = rendered.outbound(self.mode)
            if item is not None:
                await self.queue.put_wait(item)

    async def finish_replay(self, last_durable_id: int) -> None:
        """Mark the end of the replay, flush what was parked meanwhile and go live."""
        self.cursor = max(self.cursor, last_durable_id)
        done = face_pb2.ConnectResponse(
            replay_done=mind_pb2.ReplayDone(last_durable_id=self.cursor)
        )
        await self.queue.put_wait(Outbound(done.SerializeToString(), durable_id=self.cursor))
        pending, self._pending = self._pending, []
        self.phase = Phase.LIVE
        for rendered in pending:
            self.on_live_event(rendered)

    def stop_subscription(self) -> None:
        self.phase = Phase.IDLE
        self._pending = []

    def on_live_event(self, rendered: RenderedEvent) -> None:
        """Called by the shared feed for every upstream event (never awaits)."""
        if self.phase is Phase.IDLE or self.queue.closed:
            return
        event = rendered.event
        if event.durable_id == 0:
            if self.phase is Phase.LIVE and self.identity.can_see(event):
                item = rendered.outbound(self.mode)
                if item is not None:
                    self.queue.offer(item)
            return
        if self.phase is Phase.CATCHING_UP:
            if len(self._pending) >= self.queue.capacity:
                self.close("RESOURCE_EXHAUSTED", RESYNC_REQUIRED, resync=True)
            else:
                self._pending.append(rendered)
            return
        if event.durable_id <= self.cursor:
            return
        self.cursor = event.durable_id
        if self.identity.can_see(event):
            item = rendered.outbound(self.mode)
            if item is not None:
                self._put(item)

    def resync_frame(self) -> face_pb2.ConnectResponse:
        return face_pb2.ConnectResponse(
            resync=face_pb2.Resync(after_id=self.written_durable_id, reason=RESYNC_REQUIRED)
        )
