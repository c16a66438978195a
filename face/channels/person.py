"""One paired person on one channel: their Face connection, and what of it reaches the network.

The person talks through a Face connection of their own credential. Its event feed covers every
conversation their principal sees; only the conversations bound to their threads on this
channel are told on the network. Events are handled one at a time, in order, and the cursor
(the last durable event handled) is committed after each, so a restart resumes exactly there:
what was sent before is found by its key in the state and not sent again, what was not is sent.

A reply streams into one network message edited as it grows (where the network can edit and
the channel asks for it), at most one edit per `edit_interval`; the stored message is the whole
text, so it finishes the streamed one (or is sent whole), whatever deltas were dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from face.channels.state import ChannelState, Sender
from face.channels.telling import approval_decided, approval_request, run_failed
from face.channels.transport import Image, Transport
from face.chat.session import (
    ALREADY_EXISTS,
    NOT_FOUND,
    ChatSession,
    CommandFailed,
    FatalSessionError,
)
from tobe.config import ChannelSettings, MatrixChannelSettings
from tobe.runtime.tls import ClientTls
from tobe.v1 import common_pb2, events_pb2, face_pb2, mind_pb2

log = logging.getLogger(__name__)

_ENDED = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}
# The most provider steps looked through for a reply streamed before a restart.
_MAX_STEPS = 64


@dataclass(frozen=True)
class FaceTarget:
    """Where the Face is, as `tobe chat` dials it."""

    address: str
    tls: ClientTls | None


@dataclass
class _Stream:
    """A reply growing in one network message."""

    network_id: str
    text: str
    shown: str
    last_edit: float
    pending: asyncio.TimerHandle | None = None
    # Streaming began before a restart: its start is lost, so only the whole text replaces it.
    resumed: bool = False


@dataclass
class _Run:
    """What is known of a run in a bound conversation while it goes."""

    stored: int = 0  # assistant messages stored so far: the step the next one ends
    streams: dict[int, _Stream] = field(default_factory=dict)


class PersonLink:
    def __init__(
        self,
        sender: Sender,
        transport: Transport,
        settings: ChannelSettings,
        state: ChannelState,
        face: FaceTarget,
        on_revoked: Callable[[Sender], Awaitable[None]],
    ) -> None:
        self.sender = sender
        self._transport = transport
        self._settings = settings
        self._state = state
        self._channel = transport.name
        self._on_revoked = on_revoked
        self._events: asyncio.Queue[events_pb2.Event] = asyncio.Queue()
        self._runs: dict[str, _Run] = {}
        # Approvals waiting in each bound conversation, newest last.
        self.waiting: dict[str, list[str]] = {}
        self._subscribed = False
        self._streaming = (
            transport.edits
            and isinstance(settings, MatrixChannelSettings)
            and settings.reply == "edits"
        )
        self._edit_interval = (
            settings.edit_interval if isinstance(settings, MatrixChannelSettings) else 1.0
        )
        self.session = ChatSession(
            face.address,
            sender.token,
            on_event=self._events.put_nowait,
            on_status=self._status,
            client_name=f"tobe-channel-{self._channel}",
            tls=face.tls,
        )
        self.session.on_snapshot_required = self._skip_gap
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await self.session.start()
        self._tasks = [
            asyncio.create_task(self._handle_events()),
            asyncio.create_task(self._watch_end()),
        ]
        cursor = self._state.cursor(self._channel, self.sender.address)
        if cursor is not None:
            await self._subscribe(cursor)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.session.close()

    async def conversation(self, thread: str, title: str) -> str:
        """The conversation of `thread` (made and bound when new), with the feed following it."""
        key = self._state.conversation_for(self._channel, thread)
        if key is None:
            key = conversation_key(self._channel, thread)
            after = await self._create(key, title)
            self._state.bind_thread(self._channel, thread, self.sender.address, key)
        else:
            after = 0
        if key not in self.waiting:
            # Approvals asked before this link began (before a restart) can be decided too.
            snapshot = await self._snapshot(key)
            self.waiting[key] = [approval.id for approval in snapshot.pending_approvals]
            after = after or snapshot.last_event_id
        if not self._subscribed:
            if after == 0:
                after = await self._head(key)
            self._state.advance(self._channel, self.sender.address, after)
            await self._subscribe(self._state.cursor(self._channel, self.sender.address) or after)
        return key

    async def send_chat(
        self, key: str, thread: str, title: str, request: mind_pb2.SendChatRequest
    ) -> mind_pb2.SendChatResponse:
        try:
            return await self.session.send_chat(request)
        except CommandFailed as exc:
            if exc.code != NOT_FOUND:
                raise
        # The conversation was deleted in the meantime: the thread starts it again.
        await self._create(key, title)
        return await self.session.send_chat(request)

    async def decide(self, approval_id: str, approve: bool) -> None:
        decision = (
            common_pb2.APPROVAL_DECISION_APPROVE_ONCE
            if approve
            else common_pb2.APPROVAL_DECISION_DENY
        )
        try:
            await self.session.call(
                face_pb2.MindCall(
                    decide_approval=mind_pb2.DecideApprovalRequest(
                        approval_id=approval_id, decision=decision
                    )
                )
            )
        except CommandFailed as exc:
            # Decided already (elsewhere, or a second reaction): nothing more to do.
            log.info("approval %s not decided from %s: %s", approval_id, self._channel, exc)

    async def _create(self, key: str, title: str) -> int:
        try:
            reply = await self.session.call(
                face_pb2.MindCall(
                    create_conversation=mind_pb2.CreateConversationRequest(
                        key=key, title=title[:120], profile=self._settings.profile
                    )
                )
            )
        except CommandFailed as exc:
            if exc.code != ALREADY_EXISTS:
                raise
            return await self._head(key)
        return reply.create_conversation.conversation.last_event_id

    async def _head(self, key: str) -> int:
        return (await self._snapshot(key)).last_event_id

    async def _snapshot(self, key: str) -> mind_pb2.GetSnapshotResponse:
        reply = await self.session.call(
            face_pb2.MindCall(
                get_snapshot=mind_pb2.GetSnapshotRequest(conversation_key=key, message_limit=1)
            )
        )
        return reply.get_snapshot

    async def _subscribe(self, after_id: int) -> None:
        self._subscribed = True
        await self.session.subscribe(after_id)

    async def _skip_gap(self) -> None:
        """The Mind no longer keeps events this far back: follow on from each thread's now."""
        heads = [await self._head(key) for key in self._bound()]
        after = max(heads, default=0)
        log.warning(
            "%s: %s was away longer than the Mind keeps events; what happened meanwhile is not "
            "sent to them (the conversation keeps it)",
            self._channel,
            self.sender.address,
        )
        self._state.advance(self._channel, self.sender.address, after)
        await self._subscribe(after)

    async def _watch_end(self) -> None:
        try:
            await self.session.ended()
        except FatalSessionError as exc:
            log.warning("%s: %s's credential was refused: %s", self._channel, self.sender, exc)
            await self._on_revoked(self.sender)

    def _status(self, line: str) -> None:
        log.info("%s: %s: %s", self._channel, self.sender.address, line)

    def _bound(self) -> dict[str, str]:
        return self._state.threads_of(self._channel, self.sender.address)

    async def _handle_events(self) -> None:
        while True:
            event = await self._events.get()
            thread = self._bound().get(event.conversation_key)
            if thread is not None:
                try:
                    await self._tell(event, thread)
                except Exception:
                    # One event the network would not take must not stop the others; the next
                    # stored message or restart sends what is missing.
                    log.exception("%s: could not tell event %d", self._channel, event.durable_id)
            if event.durable_id > 0:
                self._state.advance(self._channel, self.sender.address, event.durable_id)

    async def _tell(self, event: events_pb2.Event, thread: str) -> None:
        kind = event.WhichOneof("payload")
        if kind == "text_delta" and self._streaming:
            await self._delta(event.text_delta, thread)
        elif kind == "message_appended":
            await self._message(event.message_appended, thread)
        elif kind == "approval_changed":
            await self._approval(event.approval_changed, thread)
        elif kind == "run_changed":
            await self._run(event.run_changed, thread)

    async def _delta(self, delta: events_pb2.TextDelta, thread: str) -> None:
        run = self._runs.setdefault(delta.run_id, _Run())
        stream = run.streams.get(delta.step)
        if stream is None:
            if not delta.text.strip():
                return
            key = f"s:{delta.run_id}:{delta.step}"
            sent_before = self._state.sent(self._channel, key)
            network_id = sent_before or await self._transport.send(thread, delta.text, key=key)
            self._state.record_sent(self._channel, key, network_id)
            run.streams[delta.step] = _Stream(
                network_id, delta.text, delta.text, time.monotonic(), resumed=bool(sent_before)
            )
            return
        stream.text += delta.text
        if not stream.resumed:
            self._schedule_edit(stream, thread)

    def _schedule_edit(self, stream: _Stream, thread: str) -> None:
        if stream.pending is not None:
            return
        wait = max(0.0, stream.last_edit + self._edit_interval - time.monotonic())
        loop = asyncio.get_running_loop()
        stream.pending = loop.call_later(
            wait, lambda: asyncio.ensure_future(self._edit(stream, thread))
        )

    async def _edit(self, stream: _Stream, thread: str) -> None:
        stream.pending = None
        if stream.text == stream.shown:
            return
        text = stream.text
        stream.last_edit = time.monotonic()
        try:
            await self._transport.edit(thread, stream.network_id, text)
            stream.shown = text
        except Exception:
            log.warning("%s: an edit of a streaming reply failed", self._channel, exc_info=True)

    async def _message(self, message: common_pb2.Message, thread: str) -> None:
        if message.role == common_pb2.MESSAGE_ROLE_TOOL:
            await self._tool_images(message, thread)
            return
        if message.role != common_pb2.MESSAGE_ROLE_ASSISTANT:
            return
        run = self._runs.setdefault(message.run_id, _Run()) if message.run_id else _Run()
        step = run.stored
        run.stored += 1
        key = f"m:{message.id}"
        if self._state.sent(self._channel, key) is not None:
            return
        if not message.text.strip():
            return
        streamed = self._streamed(message.run_id, step, run)
        if streamed is not None:
            if streamed.pending is not None:
                streamed.pending.cancel()
                streamed.pending = None
            if streamed.shown != message.text:
                await self._transport.edit(thread, streamed.network_id, message.text)
            streamed.shown = streamed.text = message.text
            self._state.record_sent(
                self._channel, f"f:{message.run_id}:{step}", streamed.network_id
            )
            self._state.record_sent(self._channel, key, streamed.network_id)
            return
        network_id = await self._transport.send(thread, message.text, key=key)
        self._state.record_sent(self._channel, key, network_id)

    async def _tool_images(self, message: common_pb2.Message, thread: str) -> None:
        """The pictures a tool returned (a Hand's screenshot): what the agent saw, the person
        sees; a sealed result shows nothing."""
        key = f"m:{message.id}"
        if not message.images or message.redacted or self._state.sent(self._channel, key):
            return
        images = await self._images(message)
        text = (
            "The picture a tool returned:"
            if len(images) == 1
            else f"The {len(images)} pictures a tool returned:"
        )
        network_id = await self._transport.send(thread, text, key=key, images=images)
        self._state.record_sent(self._channel, key, network_id)

    def _streamed(self, run_id: str, step: int, run: _Run) -> _Stream | None:
        """The message a reply's step was streaming into: known in memory, or (after a
        restart) found in the state by its key."""
        if not self._streaming or not run_id:
            return None
        if run.streams:
            return run.streams.get(step)
        for earlier in range(_MAX_STEPS):
            network_id = self._state.sent(self._channel, f"s:{run_id}:{earlier}")
            if network_id is not None and not self._state.sent(
                self._channel, f"f:{run_id}:{earlier}"
            ):
                self._state.record_sent(self._channel, f"f:{run_id}:{earlier}", network_id)
                return _Stream(network_id, "", "", 0.0)
        return None

    async def _images(self, message: common_pb2.Message) -> tuple[Image, ...]:
        images = []
        for ref in message.images:
            reply = await self.session.call(
                face_pb2.MindCall(
                    get_image=mind_pb2.GetImageRequest(
                        conversation_key=message.conversation_key, digest=ref.digest
                    )
                )
            )
            images.append(Image(reply.get_image.media_type, reply.get_image.data))
        return tuple(images)

    async def _approval(self, approval: common_pb2.Approval, thread: str) -> None:
        waiting = self.waiting.setdefault(approval.conversation_key, [])
        key = f"a:{approval.id}"
        if approval.decision == common_pb2.APPROVAL_DECISION_UNSPECIFIED:
            if approval.id not in waiting:
                waiting.append(approval.id)
            if self._state.sent(self._channel, key) is None:
                text = approval_request(approval, self._settings)
                network_id = await self._transport.send(thread, text, key=key)
                self._state.record_sent(self._channel, key, network_id, approval_id=approval.id)
            return
        with contextlib.suppress(ValueError):
            waiting.remove(approval.id)
        asked = self._state.sent(self._channel, key)
        decided = approval_decided(approval)
        done_key = f"ad:{approval.id}"
        if (
            asked is None
            or decided is None
            or not self._transport.edits
            or self._state.sent(self._channel, done_key) is not None
        ):
            return
        await self._transport.edit(thread, asked, decided)
        self._state.record_sent(self._channel, done_key, asked)

    async def _run(self, run: common_pb2.Run, thread: str) -> None:
        if run.state == common_pb2.RUN_STATE_RUNNING:
            await self._typing(thread, True)
            return
        if run.state not in _ENDED:
            return
        await self._typing(thread, False)
        finished = self._runs.pop(run.id, None)
        for stream in finished.streams.values() if finished else ():
            if stream.pending is not None:
                stream.pending.cancel()
        line = run_failed(run)
        key = f"r:{run.id}"
        if line is not None and self._state.sent(self._channel, key) is None:
            network_id = await self._transport.send(thread, line, key=key)
            self._state.record_sent(self._channel, key, network_id)

    async def _typing(self, thread: str, active: bool) -> None:
        try:
            await self._transport.typing(thread, active)
        except Exception:
            log.debug("%s: typing not shown", self._channel, exc_info=True)


def conversation_key(channel: str, thread: str) -> str:
    """One conversation per thread of a channel, the same key every time."""
    digest = hashlib.sha256(f"{channel}\0{thread}".encode()).hexdigest()[:32]
    return f"p_{channel}-{digest}"
