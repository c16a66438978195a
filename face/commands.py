"""Commands of one connection: validation, the Mind call made for the client, the reply.

Every command but `subscribe` is one Mind call, forwarded the same way whatever it is
(`face.forwarding` says which): the gateway checks the scope the call needs, puts in the
connection's principal and detail mode, renders the response for that mode and passes a
failure's status through. The Mind enforces ownership for the principal named in
`on_behalf_of` (foreign conversations answer NOT_FOUND). `subscribe` runs the connection's
event feed (replay, then live).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

import grpc
from google.protobuf.message import Message

from face.connection import Connection, RenderedEvent
from face.errors import GatewayError
from face.feed import EventFeed
from face.forwarding import ForwardedCall, command_request, mind_request, vouch
from face.mind_client import MindClient
from face.projection import project_response
from tobe import scopes
from tobe.runtime.web_url import pair_url
from tobe.scopes import (
    FACE_SUBSCRIBE,
    face_command_scope,
    mind_call_scope,
    missing_scope_message,
)
from tobe.v1 import events_pb2, face_pb2, mind_pb2

log = logging.getLogger(__name__)

MAX_REQUEST_ID = 128
# gRPC status code numbers used in command error replies.
INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT.value[0]
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION.value[0]
PERMISSION_DENIED = grpc.StatusCode.PERMISSION_DENIED.value[0]


def status_number(code: str) -> int:
    """The number of the status named `code`; UNKNOWN's for a name gRPC does not have."""
    return grpc.StatusCode.__members__.get(code, grpc.StatusCode.UNKNOWN).value[0]


def status_name(number: int) -> str:
    """The name of the status numbered `number` (a CommandError's code); UNKNOWN for others."""
    return _STATUS_NAMES.get(number, grpc.StatusCode.UNKNOWN.name)


_STATUS_NAMES = {status.value[0]: status.name for status in grpc.StatusCode}


@dataclass(frozen=True)
class SlowCall:
    """A Mind call that waits for the conversation's active run and then for the model: it gets
    minutes, not seconds, and is answered when it ends, so that the commands after it (a
    cancel, an approval that run waits for) are not held behind it."""

    timeout: float
    # What it does to the conversation it must name ("compact").
    purpose: str


SLOW_CALLS: dict[str, SlowCall] = {"CompactConversation": SlowCall(600.0, "compact")}

# Builds the reply to a command from the Mind's response, already rendered for the connection.
Answer = Callable[[Message], face_pb2.Reply]


def _in_reply_field(field: str) -> Answer:
    """Replies to an older command frame: the response in the Reply field of the frame's name."""

    def answer(response: Message) -> face_pb2.Reply:
        reply = face_pb2.Reply()
        getattr(reply, field).CopyFrom(response)
        return reply

    return answer


def _in_mind_reply(field: str) -> Answer:
    """Replies to a `mind` frame: the response in MindReply's field of the call's name."""

    def answer(response: Message) -> face_pb2.Reply:
        reply = face_pb2.Reply()
        getattr(reply.mind, field).CopyFrom(response)
        return reply

    return answer


class CommandRouter:
    """Handles the frames of one connection after its hello."""

    def __init__(
        self, connection: Connection, mind: MindClient, feed: EventFeed, web_base_url: str = ""
    ) -> None:
        """`web_base_url`: where this Face serves the web client ("" when it serves none)."""
        self._connection = connection
        self._mind = mind
        self._feed = feed
        self._web_base_url = web_base_url
        identity = connection.identity
        self._on_behalf_of = mind_pb2.OnBehalfOf(
            principal=identity.principal,
            scopes=identity.scopes,
            credential_id=identity.credential_id,
        )
        self._subscription: asyncio.Task[None] | None = None
        # Commands answered when they end, not in order (slow calls).
        self._background: set[asyncio.Task[None]] = set()

    @property
    def subscribed(self) -> bool:
        return self._subscription is not None

    async def handle(self, request: face_pb2.ConnectRequest) -> None:
        request_id = request.request_id
        kind = request.WhichOneof("frame")
        match kind:
            case None:
                self._connection.reply_error(
                    request_id, INVALID_ARGUMENT, "the frame carries no known command"
                )
            case "hello":
                self._connection.reply_error(
                    request_id,
                    FAILED_PRECONDITION,
                    "hello was already received on this connection",
                )
            case _ if not request_id or len(request_id) > MAX_REQUEST_ID:
                self._connection.reply_error(
                    request_id[:MAX_REQUEST_ID],
                    INVALID_ARGUMENT,
                    f"request_id is required and at most {MAX_REQUEST_ID} characters",
                )
            case "subscribe":
                await self.subscribe(request_id, request.subscribe.after_id)
            case scopes.FACE_MIND_CALL:
                await self._forward_mind_call(request_id, request.mind)
            case _ if self._refused(request_id, kind, face_command_scope):
                pass  # answered PERMISSION_DENIED: the credential lacks the command's scope
            case _:
                call, mind_request = command_request(kind, getattr(request, kind))
                answer = self._pairing if kind == "pair_device" else _in_reply_field(kind)
                await self._forward(request_id, call, mind_request, answer)

    async def _forward_mind_call(self, request_id: str, frame: face_pb2.MindCall) -> None:
        found = mind_request(frame)
        if found is None:
            self._connection.reply_error(
                request_id, INVALID_ARGUMENT, "the mind frame carries no Mind call this Face knows"
            )
            return
        call, request = found
        if not self._refused(request_id, call.method, mind_call_scope):
            await self._forward(request_id, call, request, _in_mind_reply(call.reply_field))

    def _refused(self, request_id: str, action: str, scope_of: Callable[[str], str | None]) -> bool:
        """Answer PERMISSION_DENIED when the client's credential lacks the scope `scope_of`
        says `action` needs (`tobe.scopes`; the Mind checks the same again for its calls)."""
        try:
            scope = scope_of(action)
        except KeyError:
            message = f"{action} declares no scope (tobe.scopes), so nobody may send it"
        else:
            if scope is None or scope in self._connection.identity.scopes:
                return False
            message = missing_scope_message(scope, action)
        log.info("connection %s: refused %s: %s", self._connection.id, action, message)
        self._connection.reply_error(request_id, PERMISSION_DENIED, message)
        return True

    async def settle(self) -> None:
        """Wait for the commands still being answered (the client half-closed its side)."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    async def _forward(
        self, request_id: str, call: ForwardedCall, request: Message, answer: Answer
    ) -> None:
        """Make `call` for this connection's principal and queue its reply (or its error)."""
        vouch(request, self._on_behalf_of, self._connection.mode)
        slow = SLOW_CALLS.get(call.method)
        if slow is None:
            await self._answer(request_id, call, request, answer)
        elif not getattr(request, "conversation_key", ""):
            # Answered here without a round trip: the Mind refuses it the same way.
            self._connection.reply_error(
                request_id,
                INVALID_ARGUMENT,
                f"conversation_key is required: name the conversation to {slow.purpose}",
            )
        else:
            task = asyncio.create_task(
                self._answer(request_id, call, request, answer, slow.timeout)
            )
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _answer(
        self,
        request_id: str,
        call: ForwardedCall,
        request: Message,
        answer: Answer,
        timeout: float | None = None,
    ) -> None:
        try:
            response = await self._mind.call(call.method, request, timeout=timeout)
        except GatewayError as exc:
            self._connection.reply_error(request_id, status_number(exc.code), exc.message)
            return
        reply = answer(project_response(response, self._connection.mode))
        reply.request_id = request_id
        self._connection.reply(reply)

    def _pairing(self, response: Message) -> face_pb2.Reply:
        """A pairing code with the link that opens this Face's web client on it."""
        assert isinstance(response, mind_pb2.CreatePairingCodeResponse)
        base = self._web_base_url
        url = pair_url(base, response.pairing.code) if base else ""
        return face_pb2.Reply(
            pair_device=face_pb2.PairDeviceReply(pairing=response.pairing, url=url)
        )

    async def subscribe(self, request_id: str, after_id: int) -> None:
        """(Re)start the event feed of this connection; a second subscribe replaces the first.

        The reply (ack or error) is queued before this returns, so replies keep command order;
        the replay and the live phase then continue in a task of their own.
        """
        connection = self._connection
        if after_id < 0:
            connection.reply_error(request_id, INVALID_ARGUMENT, "after_id must be >= 0")
            return
        if self._refused(request_id, FACE_SUBSCRIBE, face_command_scope):
            return
        await self.stop()
        connection.begin_catch_up(after_id, self._feed.last_id)
        stream = self._mind.subscribe(after_id, include_ephemeral=False)
        try:
            first = await anext(stream)
        except GatewayError as exc:
            await stream.aclose()
            connection.stop_subscription()
            connection.reply_error(request_id, status_number(exc.code), exc.message)
            return
        connection.reply(
            face_pb2.Reply(
                request_id=request_id, subscribe=face_pb2.SubscribeAck(after_id=after_id)
            )
        )
        self._subscription = asyncio.create_task(self._follow(stream, first))

    async def stop(self) -> None:
        for task in list(self._background):
            task.cancel()
        if self._subscription is not None:
            self._subscription.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._subscription
            self._subscription = None
        self._connection.stop_subscription()

    async def _follow(
        self,
        stream: AsyncGenerator[events_pb2.Event | mind_pb2.ReplayDone, None],
        item: events_pb2.Event | mind_pb2.ReplayDone,
    ) -> None:
        """Replay up to the shared feed's position, then hand the connection to the feed."""
        connection = self._connection
        try:
            replay_done = False
            while True:
                if isinstance(item, events_pb2.Event):
                    if item.durable_id > 0:
                        self._feed.modes.learn(item)
                        await connection.replay(RenderedEvent(item, self._feed.modes))
                else:
                    replay_done = True
                    connection.cursor = max(connection.cursor, item.last_durable_id)
                if connection.caught_up(replay_done):
                    break
                item = await anext(stream)
            await connection.finish_replay(connection.cursor)
        except GatewayError as exc:
            connection.stop_subscription()
            log.warning("replay for connection %s failed: %s", connection.id, exc)
            connection.close("UNAVAILABLE", f"event replay failed ({exc.message}); resume later")
        finally:
            await stream.aclose()
