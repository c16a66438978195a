"""The gateway's client of the Mind: one channel, the gateway's service credential, and the
mapping of gRPC failures to `MindCallError` so that nothing else in Face handles grpc errors.

One method per Mind call, each naming its stub method and its request and response types.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TypeVar

import grpc
from google.protobuf.message import Message

from face.connection import Identity
from face.errors import MindCallError
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.v1 import events_pb2, mind_pb2, mind_pb2_grpc

# Unary calls to the Mind that take longer than this are reported as UNAVAILABLE.
CALL_TIMEOUT = 60.0

Request = TypeVar("Request", bound=Message)
Response = TypeVar("Response", bound=Message)


def _error(exc: grpc.aio.AioRpcError) -> MindCallError:
    code = exc.code()
    if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        return MindCallError("UNAVAILABLE", f"the Mind did not answer: {exc.details()}")
    return MindCallError(code.name, exc.details() or code.name.lower())


class MindClient:
    """Opens its channel on first use: an aio channel belongs to the loop it was made on."""

    def __init__(self, address: str, token: str) -> None:
        self.address = address
        self._metadata = bearer_metadata(token)
        self._channel: grpc.aio.Channel | None = None
        self._stub_instance: mind_pb2_grpc.MindAsyncStub | None = None

    @property
    def _stub(self) -> mind_pb2_grpc.MindAsyncStub:
        if self._stub_instance is None:
            self._channel = open_channel(self.address)
            self._stub_instance = mind_pb2_grpc.MindStub(self._channel)
        return self._stub_instance

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel, self._stub_instance = None, None

    async def authenticate(self, client_token: str) -> Identity:
        response = await self._unary(
            self._stub.Authenticate, mind_pb2.AuthenticateRequest(token=client_token)
        )
        identity = response.identity
        return Identity(identity.principal, tuple(identity.scopes), identity.credential_id)

    async def create_conversation(
        self, request: mind_pb2.CreateConversationRequest
    ) -> mind_pb2.CreateConversationResponse:
        return await self._unary(self._stub.CreateConversation, request)

    async def list_conversations(
        self, request: mind_pb2.ListConversationsRequest
    ) -> mind_pb2.ListConversationsResponse:
        return await self._unary(self._stub.ListConversations, request)

    async def send_chat(self, request: mind_pb2.SendChatRequest) -> mind_pb2.SendChatResponse:
        return await self._unary(self._stub.SendChat, request)

    async def cancel_run(self, request: mind_pb2.CancelRunRequest) -> mind_pb2.CancelRunResponse:
        return await self._unary(self._stub.CancelRun, request)

    async def get_snapshot(
        self, request: mind_pb2.GetSnapshotRequest
    ) -> mind_pb2.GetSnapshotResponse:
        return await self._unary(self._stub.GetSnapshot, request)

    async def get_history(self, request: mind_pb2.GetHistoryRequest) -> mind_pb2.GetHistoryResponse:
        return await self._unary(self._stub.GetHistory, request)

    async def decide_approval(
        self, request: mind_pb2.DecideApprovalRequest
    ) -> mind_pb2.DecideApprovalResponse:
        return await self._unary(self._stub.DecideApproval, request)

    async def _unary(
        self, method: grpc.aio.UnaryUnaryMultiCallable[Request, Response], request: Request
    ) -> Response:
        """Make one unary call with the gateway's credential; failures raise MindCallError."""
        try:
            return await method(request, metadata=self._metadata, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            raise _error(exc) from exc

    async def subscribe(
        self, after_id: int, *, include_ephemeral: bool
    ) -> AsyncGenerator[events_pb2.Event | mind_pb2.ReplayDone, None]:
        """Mind.Subscribe as events and a ReplayDone marker; the end of the stream raises too."""
        call = self._stub.Subscribe(
            mind_pb2.SubscribeRequest(after_id=after_id, include_ephemeral=include_ephemeral),
            metadata=self._metadata,
        )
        try:
            async for item in call:
                if item.WhichOneof("item") == "replay_done":
                    yield item.replay_done
                else:
                    yield item.event
        except grpc.aio.AioRpcError as exc:
            raise _error(exc) from exc
        finally:
            call.cancel()
        raise MindCallError("UNAVAILABLE", "the Mind ended the event stream")
