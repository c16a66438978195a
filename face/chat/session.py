"""A resilient client connection to Face: commands with replies, events, automatic resume.

The session reconnects with the platform backoff (1 s doubling to 30 s) whenever the stream
ends (Face restarted, resync required, network), saying so through `on_status` ("reconnecting…"
once the connection is lost, then each attempt's wait; "reconnected"; likewise when the Face
says its own link to the Mind went down or came back), re-subscribes after the last durable id
it handled, and re-sends commands whose reply was lost; `send_chat` retries are safe because
they carry the same idempotency key. "snapshot required" on a resume is handed to
`on_snapshot_required`, which starts over from a snapshot. A refused or revoked credential ends
the session for good: `ended()` raises it, and so does every command then.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import TypedDict, Unpack

import grpc

from face.mind_trouble import is_face_trouble
from tobe.runtime.backoff import Backoff
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.runtime.tls import ClientTls
from tobe.v1 import common_pb2, events_pb2, face_pb2, face_pb2_grpc, mind_pb2

log = logging.getLogger(__name__)

SNAPSHOT_REQUIRED = "snapshot required"
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE.value[0]
# Codes of a `CommandFailed` its callers act on.
NOT_FOUND = grpc.StatusCode.NOT_FOUND.value[0]
ALREADY_EXISTS = grpc.StatusCode.ALREADY_EXISTS.value[0]

Call = grpc.aio.StreamStreamCall[face_pb2.ConnectRequest, face_pb2.ConnectResponse]


class Command(TypedDict, total=False):
    """The frames of a `ConnectRequest` this client sends, one of which a command names: its
    Mind calls go as `mind` frames (`ChatSession.call`)."""

    mind: face_pb2.MindCall
    subscribe: face_pb2.SubscribeCommand
    pair_device: face_pb2.PairDeviceCommand


class CommandFailed(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class FatalSessionError(Exception):
    """Reconnecting cannot help (bad or revoked credential)."""


# Each attempt dials with subchannels of its own: gRPC shares them process-wide by default, so
# a new channel would inherit the old one's reconnect backoff and fail at once while the Face
# is back already.
_FRESH: list[tuple[str, int | str]] = [("grpc.use_local_subchannel_pool", 1)]


class ChatSession:
    def __init__(
        self,
        address: str,
        token: str,
        *,
        on_event: Callable[[events_pb2.Event], None],
        on_status: Callable[[str], None],
        detail_mode: common_pb2.DetailMode.ValueType = common_pb2.DETAIL_MODE_TRANSPARENT,
        client_name: str = "tobe-chat",
        tls: ClientTls | None = None,
        max_send_bytes: int | None = None,
    ) -> None:
        """`max_send_bytes`: the largest frame sent (images); the channel's default otherwise."""
        self._address = address
        self._tls = tls
        self._options: list[tuple[str, int | str]] = _FRESH + (
            [("grpc.max_send_message_length", max_send_bytes)] if max_send_bytes else []
        )
        self._token = token
        self._on_event = on_event
        self._on_status = on_status
        self._mode = detail_mode
        self._client_name = client_name
        self.on_snapshot_required: Callable[[], Awaitable[None]] | None = None
        self.last_durable_id = 0
        self.subscribed = False
        self.principal = ""
        self._ids = itertools.count(1)
        self._outbox: asyncio.Queue[face_pb2.ConnectRequest] = asyncio.Queue()
        self._waiting: dict[
            str, tuple[face_pb2.ConnectRequest, asyncio.Future[face_pb2.Reply]]
        ] = {}
        self._connected = asyncio.Event()
        # Set (and replaced by a fresh one) whenever the Face says its link to the Mind is back.
        self._mind_back = asyncio.Event()
        self.fatal: FatalSessionError | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Connect (retrying with backoff) and wait for the first welcome."""
        self._task = asyncio.create_task(self._run())
        connected = asyncio.create_task(self._connected.wait())
        await asyncio.wait({self._task, connected}, return_when=asyncio.FIRST_COMPLETED)
        if self._task.done():
            connected.cancel()
            self._task.result()

    async def ended(self) -> None:
        """Wait until the session ends for good; raises the FatalSessionError that ended it."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def command(self, **frame: Unpack[Command]) -> face_pb2.Reply:
        """Send one command and return its successful reply; CommandFailed otherwise, and
        FatalSessionError once the session ended for good."""
        if self.fatal is not None:
            raise self.fatal
        request = face_pb2.ConnectRequest(request_id=f"r{next(self._ids)}", **frame)
        future: asyncio.Future[face_pb2.Reply] = asyncio.get_running_loop().create_future()
        self._waiting[request.request_id] = (request, future)
        await self._outbox.put(request)
        reply = await future
        if reply.WhichOneof("result") == "error":
            raise CommandFailed(reply.error.code, reply.error.message)
        return reply

    async def call(self, call: face_pb2.MindCall) -> face_pb2.MindReply:
        """Make one Mind call through the Face (its request without `on_behalf_of`, which the
        Face fills in); the Mind's response is in the reply's field of the call's name."""
        return (await self.command(mind=call)).mind

    async def send_chat(self, request: mind_pb2.SendChatRequest) -> mind_pb2.SendChatResponse:
        """Send a message; while the Mind is unavailable (restarting) it is sent again with
        the same idempotency key, with backoff, so it goes out once the Mind is back, once."""
        backoff = Backoff()
        while True:
            back = self._mind_back
            try:
                return (await self.call(face_pb2.MindCall(send_chat=request))).send_chat
            except CommandFailed as exc:
                if exc.code != UNAVAILABLE:
                    raise
            delay = backoff.next_delay()
            self._on_status(f"the Mind is unavailable; sending your message again in {delay:.0f}s")
            # Or at once when the Face says its link to the Mind is back.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await back.wait()

    async def subscribe(self, after_id: int) -> None:
        self.last_durable_id = after_id
        self.subscribed = True
        await self.command(subscribe=face_pb2.SubscribeCommand(after_id=after_id))

    async def _run(self) -> None:
        backoff = Backoff()
        while True:
            try:
                await self._connect_once(backoff)
                reason = "the Face closed the connection"
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.UNAUTHENTICATED:
                    self.fatal = FatalSessionError(refused(exc.details() or ""))
                    self._fail_waiting(self.fatal)
                    raise self.fatal from exc
                details = exc.details() or ""
                if exc.code() == grpc.StatusCode.UNAVAILABLE and not is_face_trouble(details):
                    reason = f"the Face at {self._address} is unavailable"
                else:
                    reason = details or exc.code().name
            delay = backoff.next_delay()
            if self._connected.is_set():
                self._connected.clear()
                self._on_status(f"connection to the Face lost ({reason}); reconnecting…")
            else:
                self._on_status(f"reconnecting… ({reason}); next attempt in {delay:.0f}s")
            await asyncio.sleep(delay)

    async def _connect_once(self, backoff: Backoff) -> None:
        async with open_channel(
            self._address, tls=self._tls, extra_options=self._options
        ) as channel:
            stub = face_pb2_grpc.FaceGatewayStub(channel)
            call = stub.Connect(metadata=bearer_metadata(self._token))
            await call.write(
                face_pb2.ConnectRequest(
                    request_id="hello",
                    hello=face_pb2.Hello(detail_mode=self._mode, client_name=self._client_name),
                )
            )
            welcome = await call.read()
            if not isinstance(welcome, face_pb2.ConnectResponse):  # grpc.aio.EOF: it ended
                return
            if self.principal:
                self._on_status("reconnected")
            self.principal = welcome.welcome.principal
            backoff.reset()
            # Resend what was waiting (its reply was lost with the previous connection).
            while not self._outbox.empty():
                self._outbox.get_nowait()
            waiting = [request for request, _ in self._waiting.values()]
            if self.subscribed and not any(r.HasField("subscribe") for r in waiting):
                self._resubscribe()
            for request, _ in list(self._waiting.values()):
                await call.write(request)
            self._connected.set()
            writer = asyncio.create_task(self._write(call))
            try:
                await self._read(call)
            finally:
                writer.cancel()

    def _resubscribe(self) -> None:
        request = face_pb2.ConnectRequest(
            request_id=f"r{next(self._ids)}",
            subscribe=face_pb2.SubscribeCommand(after_id=self.last_durable_id),
        )
        future: asyncio.Future[face_pb2.Reply] = asyncio.get_running_loop().create_future()
        future.add_done_callback(self._resubscribed)
        self._waiting[request.request_id] = (request, future)

    def _resubscribed(self, future: asyncio.Future[face_pb2.Reply]) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        reply = future.result()
        if reply.WhichOneof("result") == "error" and SNAPSHOT_REQUIRED in reply.error.message:
            if self.on_snapshot_required is not None:
                asyncio.ensure_future(self.on_snapshot_required())

    async def _write(self, call: Call) -> None:
        while True:
            request = await self._outbox.get()
            await call.write(request)

    async def _read(self, call: Call) -> None:
        while True:
            frame = await call.read()
            if not isinstance(frame, face_pb2.ConnectResponse):  # grpc.aio.EOF: it ended
                return
            kind = frame.WhichOneof("frame")
            if kind == "reply":
                entry = self._waiting.pop(frame.reply.request_id, None)
                if entry is not None and not entry[1].done():
                    entry[1].set_result(frame.reply)
            elif kind == "event":
                if frame.event.durable_id > 0:
                    if frame.event.durable_id <= self.last_durable_id:
                        continue
                    self.last_durable_id = frame.event.durable_id
                self._on_event(frame.event)
            elif kind == "replay_done":
                self.last_durable_id = max(self.last_durable_id, frame.replay_done.last_durable_id)
            elif kind == "mind_link":
                link = frame.mind_link
                if link.up:
                    self._mind_back.set()
                    self._mind_back = asyncio.Event()
                self._on_status(
                    "the Face is linked to the Mind again"
                    if link.up
                    else f"{link.reason or 'the Face lost its link to the Mind'}; reconnecting…"
                )

    def _fail_waiting(self, exc: Exception) -> None:
        for _, future in self._waiting.values():
            if not future.done():
                future.set_exception(exc)
        self._waiting.clear()


def refused(details: str) -> str:
    """One line for a credential the Face refused: what happened and what to do."""
    why = details or "no reason given"
    return (
        f"the Face refused this chat's credential ({why}); check it with `tobe admin whoami`, "
        "or pass another with --token"
    )
