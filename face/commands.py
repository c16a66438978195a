"""Commands of one connection: validation, the Mind call made for the client, the reply.

The Mind enforces ownership for the principal named in `on_behalf_of` (foreign conversations
answer NOT_FOUND); the gateway adds the connection's detail mode, renders replies for it and
runs the subscription (replay, then live) of the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import assert_never

import grpc

from face.connection import Connection, RenderedEvent
from face.errors import GatewayError
from face.feed import EventFeed
from face.mind_client import MindClient
from face.projection import project_history, project_snapshot
from tobe.runtime.web_url import pair_url
from tobe.scopes import FACE_SUBSCRIBE, face_command_scope, missing_scope_message
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


# The commands answered by one Mind call each; the subscribe command starts a feed instead.
UnaryCommand = (
    face_pb2.CreateConversationCommand
    | face_pb2.ListConversationsCommand
    | face_pb2.SendChatCommand
    | face_pb2.PostMessageCommand
    | face_pb2.CancelRunCommand
    | face_pb2.CompactCommand
    | face_pb2.SnapshotCommand
    | face_pb2.ReplayCommand
    | face_pb2.DecideApprovalCommand
    | face_pb2.ListMemoryCommand
    | face_pb2.DeleteMemoryCommand
    | face_pb2.ChangeScheduleCommand
    | face_pb2.ListActionsCommand
    | face_pb2.DecideActionCommand
    | face_pb2.ListProfilesCommand
    | face_pb2.SetProfileCommand
    | face_pb2.SetActiveHandCommand
    | face_pb2.PairDeviceCommand
)
Frame = face_pb2.Hello | face_pb2.SubscribeCommand | UnaryCommand


def frame_of(request: face_pb2.ConnectRequest) -> Frame | None:
    """The message set in the request's `frame` oneof; None when it carries none we know."""
    kind = request.WhichOneof("frame")
    return None if kind is None else getattr(request, kind)


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
        # Commands answered when they end, not in order (compactions).
        self._background: set[asyncio.Task[None]] = set()

    @property
    def subscribed(self) -> bool:
        return self._subscription is not None

    async def handle(self, request: face_pb2.ConnectRequest) -> None:
        request_id = request.request_id
        frame = frame_of(request)
        match frame:
            case None:
                self._connection.reply_error(
                    request_id, INVALID_ARGUMENT, "the frame carries no known command"
                )
            case face_pb2.Hello():
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
            case face_pb2.SubscribeCommand():
                await self.subscribe(request_id, frame.after_id)
            case _ if self._refused(request_id, request.WhichOneof("frame") or ""):
                pass  # answered PERMISSION_DENIED: the credential lacks the command's scope
            case face_pb2.CompactCommand() if not frame.conversation_key:
                # Answered here without a round trip: the Mind refuses it the same way.
                self._connection.reply_error(
                    request_id,
                    INVALID_ARGUMENT,
                    "conversation_key is required: name the conversation to compact",
                )
            case face_pb2.CompactCommand():
                # A compaction waits for the active run and for the model: later commands of
                # this connection (a cancel, an approval that run waits for) must not wait.
                task = asyncio.create_task(self._answer(request_id, frame))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
            case _:
                await self._answer(request_id, frame)

    def _refused(self, request_id: str, frame: str) -> bool:
        """Answer PERMISSION_DENIED when the client's credential lacks the frame's scope
        (`tobe.scopes`; the Mind checks the same again for the calls it serves)."""
        try:
            scope = face_command_scope(frame)
        except KeyError:
            message = (
                f"{frame} declares no scope (tobe.scopes.FACE_COMMANDS), so nobody may send it"
            )
        else:
            if scope is None or scope in self._connection.identity.scopes:
                return False
            message = missing_scope_message(scope, frame)
        log.info("connection %s: refused %s: %s", self._connection.id, frame, message)
        self._connection.reply_error(request_id, PERMISSION_DENIED, message)
        return True

    async def settle(self) -> None:
        """Wait for the commands still being answered (the client half-closed its side)."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    async def _answer(self, request_id: str, command: UnaryCommand) -> None:
        try:
            reply = await self._call_mind(command)
        except GatewayError as exc:
            self._connection.reply_error(request_id, status_number(exc.code), exc.message)
            return
        reply.request_id = request_id
        self._connection.reply(reply)

    async def _call_mind(self, command: UnaryCommand) -> face_pb2.Reply:
        """The command's Mind call for this connection, and its result rendered for its mode."""
        mind, who, mode = self._mind, self._on_behalf_of, self._connection.mode
        match command:
            case face_pb2.CreateConversationCommand():
                created = await mind.create_conversation(
                    mind_pb2.CreateConversationRequest(
                        on_behalf_of=who,
                        key=command.key,
                        title=command.title,
                        members=command.members,
                        profile=command.profile,
                    )
                )
                return face_pb2.Reply(create_conversation=created)
            case face_pb2.ListProfilesCommand():
                profiles = await mind.list_profiles(mind_pb2.ListProfilesRequest(on_behalf_of=who))
                return face_pb2.Reply(list_profiles=profiles)
            case face_pb2.SetProfileCommand():
                changed = await mind.set_conversation_profile(
                    mind_pb2.SetConversationProfileRequest(
                        on_behalf_of=who,
                        conversation_key=command.conversation_key,
                        profile=command.profile,
                    )
                )
                return face_pb2.Reply(set_profile=changed)
            case face_pb2.SetActiveHandCommand():
                chosen = await mind.set_active_hand(
                    mind_pb2.SetActiveHandRequest(
                        on_behalf_of=who,
                        conversation_key=command.conversation_key,
                        hand=command.hand,
                    )
                )
                return face_pb2.Reply(set_active_hand=chosen)
            case face_pb2.ListConversationsCommand():
                listed = await mind.list_conversations(
                    mind_pb2.ListConversationsRequest(
                        on_behalf_of=who, limit=command.limit, kinds=command.kinds
                    )
                )
                return face_pb2.Reply(list_conversations=listed)
            case face_pb2.SendChatCommand():
                sent = await mind.send_chat(
                    mind_pb2.SendChatRequest(
                        on_behalf_of=who,
                        conversation_key=command.conversation_key,
                        text=command.text,
                        idempotency_key=command.idempotency_key,
                        steer=command.steer,
                        detail_mode=mode,
                        images=command.images,
                    )
                )
                return face_pb2.Reply(send_chat=sent)
            case face_pb2.PostMessageCommand():
                posted = await mind.post_message(
                    mind_pb2.PostMessageRequest(
                        on_behalf_of=who,
                        conversation_key=command.conversation_key,
                        text=command.text,
                        idempotency_key=command.idempotency_key,
                    )
                )
                return face_pb2.Reply(post_message=posted)
            case face_pb2.CancelRunCommand():
                cancelled = await mind.cancel_run(
                    mind_pb2.CancelRunRequest(
                        on_behalf_of=who, conversation_key=command.conversation_key
                    )
                )
                return face_pb2.Reply(cancel_run=cancelled)
            case face_pb2.CompactCommand():
                compacted = await mind.compact_conversation(
                    mind_pb2.CompactConversationRequest(
                        on_behalf_of=who, conversation_key=command.conversation_key
                    )
                )
                return face_pb2.Reply(compact=compacted)
            case face_pb2.SnapshotCommand():
                snapshot = await mind.get_snapshot(
                    mind_pb2.GetSnapshotRequest(
                        on_behalf_of=who,
                        conversation_key=command.conversation_key,
                        message_limit=command.message_limit,
                        detail_mode=mode,
                    )
                )
                return face_pb2.Reply(snapshot=project_snapshot(snapshot, mode))
            case face_pb2.ReplayCommand():
                history = await mind.get_history(
                    mind_pb2.GetHistoryRequest(
                        on_behalf_of=who,
                        conversation_key=command.conversation_key,
                        after_message_id=command.after_message_id,
                        limit=command.limit,
                        detail_mode=mode,
                    )
                )
                return face_pb2.Reply(replay=project_history(history, mode))
            case face_pb2.DecideApprovalCommand():
                decided = await mind.decide_approval(
                    mind_pb2.DecideApprovalRequest(
                        on_behalf_of=who,
                        approval_id=command.approval_id,
                        decision=command.decision,
                        reason=command.reason,
                    )
                )
                return face_pb2.Reply(decide_approval=decided)
            case face_pb2.ListMemoryCommand():
                memory = await mind.list_memory(
                    mind_pb2.ListMemoryRequest(
                        on_behalf_of=who, conversation_key=command.conversation_key
                    )
                )
                return face_pb2.Reply(list_memory=memory)
            case face_pb2.DeleteMemoryCommand():
                deleted = await mind.delete_memory(
                    mind_pb2.DeleteMemoryRequest(
                        on_behalf_of=who, conversation_key=command.conversation_key, key=command.key
                    )
                )
                return face_pb2.Reply(delete_memory=deleted)
            case face_pb2.ChangeScheduleCommand():
                schedule = await mind.change_schedule(
                    mind_pb2.ChangeScheduleRequest(
                        on_behalf_of=who, schedule_id=command.schedule_id, change=command.change
                    )
                )
                return face_pb2.Reply(change_schedule=schedule)
            case face_pb2.PairDeviceCommand():
                paired = await mind.create_pairing_code(
                    mind_pb2.CreatePairingCodeRequest(
                        on_behalf_of=who, ttl_seconds=command.ttl_seconds
                    )
                )
                base = self._web_base_url
                url = pair_url(base, paired.pairing.code) if base else ""
                return face_pb2.Reply(
                    pair_device=face_pb2.PairDeviceReply(pairing=paired.pairing, url=url)
                )
            case face_pb2.ListActionsCommand():
                actions = await mind.list_actions(
                    mind_pb2.ListActionsRequest(
                        on_behalf_of=who,
                        conversation_key=command.conversation_key,
                        include_ended=command.include_ended,
                    )
                )
                return face_pb2.Reply(list_actions=actions)
            case face_pb2.DecideActionCommand():
                taken = await mind.decide_action(
                    mind_pb2.DecideActionRequest(
                        on_behalf_of=who,
                        action_id=command.action_id,
                        decision=command.decision,
                        amendment=command.amendment,
                        idempotency_key=command.idempotency_key,
                    )
                )
                return face_pb2.Reply(decide_action=taken)
            case _:
                assert_never(command)

    async def subscribe(self, request_id: str, after_id: int) -> None:
        """(Re)start the event feed of this connection; a second subscribe replaces the first.

        The reply (ack or error) is queued before this returns, so replies keep command order;
        the replay and the live phase then continue in a task of their own.
        """
        connection = self._connection
        if after_id < 0:
            connection.reply_error(request_id, INVALID_ARGUMENT, "after_id must be >= 0")
            return
        if self._refused(request_id, FACE_SUBSCRIBE):
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
