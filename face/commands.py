"""Commands of one connection: validation, the Mind call made for the client, the reply.

The Mind enforces ownership for the principal named in `on_behalf_of` (foreign conversations
answer NOT_FOUND); the gateway adds the connection's detail mode, renders replies for it and
runs the subscription (replay, then live) of the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import grpc
from google.protobuf.message import Message

from face.connection import Connection, RenderedEvent
from face.errors import GatewayError
from face.feed import EventFeed
from face.mind_client import MindClient
from face.projection import project_history, project_snapshot
from tobe.v1 import events_pb2, face_pb2, mind_pb2

log = logging.getLogger(__name__)

MAX_REQUEST_ID = 128
# gRPC status code numbers used in command error replies.
INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT.value[0]
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION.value[0]


def status_number(code: str) -> int:
    """The number of the status named `code`; UNKNOWN's for a name gRPC does not have."""
    return grpc.StatusCode.__members__.get(code, grpc.StatusCode.UNKNOWN).value[0]


@dataclass(frozen=True)
class UnaryCommand:
    """How one command becomes a Mind call: method, request builder, reply field."""

    method: str
    build: Callable[[Message, mind_pb2.OnBehalfOf, int], Message]
    render: Callable[[Message, int], Message] = lambda response, _mode: response


UNARY: dict[str, UnaryCommand] = {
    "create_conversation": UnaryCommand(
        "CreateConversation",
        lambda c, who, _m: mind_pb2.CreateConversationRequest(
            on_behalf_of=who, key=c.key, title=c.title, members=c.members
        ),
    ),
    "list_conversations": UnaryCommand(
        "ListConversations",
        lambda c, who, _m: mind_pb2.ListConversationsRequest(on_behalf_of=who, limit=c.limit),
    ),
    "send_chat": UnaryCommand(
        "SendChat",
        lambda c, who, mode: mind_pb2.SendChatRequest(
            on_behalf_of=who, conversation_key=c.conversation_key, text=c.text,
            idempotency_key=c.idempotency_key, steer=c.steer, detail_mode=mode,
        ),
    ),
    "cancel_run": UnaryCommand(
        "CancelRun",
        lambda c, who, _m: mind_pb2.CancelRunRequest(
            on_behalf_of=who, conversation_key=c.conversation_key
        ),
    ),
    "snapshot": UnaryCommand(
        "GetSnapshot",
        lambda c, who, mode: mind_pb2.GetSnapshotRequest(
            on_behalf_of=who, conversation_key=c.conversation_key,
            message_limit=c.message_limit, detail_mode=mode,
        ),
        project_snapshot,
    ),
    "replay": UnaryCommand(
        "GetHistory",
        lambda c, who, mode: mind_pb2.GetHistoryRequest(
            on_behalf_of=who, conversation_key=c.conversation_key,
            after_message_id=c.after_message_id, limit=c.limit, detail_mode=mode,
        ),
        project_history,
    ),
    "decide_approval": UnaryCommand(
        "DecideApproval",
        lambda c, who, _m: mind_pb2.DecideApprovalRequest(
            on_behalf_of=who, approval_id=c.approval_id, decision=c.decision, reason=c.reason
        ),
    ),
}


class CommandRouter:
    """Handles the frames of one connection after its hello."""

    def __init__(self, connection: Connection, mind: MindClient, feed: EventFeed) -> None:
        self._connection = connection
        self._mind = mind
        self._feed = feed
        identity = connection.identity
        self._on_behalf_of = mind_pb2.OnBehalfOf(
            principal=identity.principal,
            scopes=identity.scopes,
            credential_id=identity.credential_id,
        )
        self._subscription: asyncio.Task[None] | None = None

    @property
    def subscribed(self) -> bool:
        return self._subscription is not None

    async def handle(self, request: face_pb2.ConnectRequest) -> None:
        request_id = request.request_id
        kind = request.WhichOneof("frame")
        if kind is None:
            self._connection.reply_error(
                request_id, INVALID_ARGUMENT, "the frame carries no known command"
            )
        elif kind == "hello":
            self._connection.reply_error(
                request_id, FAILED_PRECONDITION, "hello was already received on this connection"
            )
        elif not request_id or len(request_id) > MAX_REQUEST_ID:
            self._connection.reply_error(
                request_id[:MAX_REQUEST_ID], INVALID_ARGUMENT,
                f"request_id is required and at most {MAX_REQUEST_ID} characters",
            )
        elif kind == "subscribe":
            await self.subscribe(request_id, request.subscribe.after_id)
        else:
            await self._unary(request_id, kind, getattr(request, kind))

    async def _unary(self, request_id: str, kind: str, command: Message) -> None:
        spec = UNARY[kind]
        request = spec.build(command, self._on_behalf_of, self._connection.mode)
        try:
            response = await self._mind.call(spec.method, request)
        except GatewayError as exc:
            self._connection.reply_error(request_id, status_number(exc.code), exc.message)
            return
        self._connection.reply(request_id, **{kind: spec.render(response, self._connection.mode)})

    async def subscribe(self, request_id: str, after_id: int) -> None:
        """(Re)start the event feed of this connection; a second subscribe replaces the first.

        The reply (ack or error) is queued before this returns, so replies keep command order;
        the replay and the live phase then continue in a task of their own.
        """
        connection = self._connection
        if after_id < 0:
            connection.reply_error(request_id, INVALID_ARGUMENT, "after_id must be >= 0")
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
        connection.reply(request_id, subscribe=face_pb2.SubscribeAck(after_id=after_id))
        self._subscription = asyncio.create_task(self._follow(stream, first))

    async def stop(self) -> None:
        if self._subscription is not None:
            self._subscription.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._subscription
            self._subscription = None
        self._connection.stop_subscription()

    async def _follow(
        self,
        stream: AsyncIterator[events_pb2.Event | mind_pb2.ReplayDone],
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
