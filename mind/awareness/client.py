"""A client of the Awareness service, authenticated with the shared service token.

The one place the Mind's awareness code speaks gRPC: a failed call raises `AwarenessLinkError`
(`mind.awareness.errors`), so the tools and the router stay free of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from mind.awareness.errors import AwarenessLinkError, JournalReset
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.v1 import awareness_pb2 as pb
from tobe.v1 import awareness_pb2_grpc as pb_grpc

Request = TypeVar("Request", bound=Message)
Response = TypeVar("Response", bound=Message)

CALL_TIMEOUT = 60.0
# How long a tool call waits for a link that is (re)connecting before it fails UNAVAILABLE.
CONNECT_PATIENCE = 5.0


def _link_error(exc: grpc.aio.AioRpcError) -> AwarenessLinkError:
    if exc.code() is grpc.StatusCode.OUT_OF_RANGE:
        return JournalReset(exc.code().name, exc.details())
    return AwarenessLinkError(exc.code().name, exc.details())


class AwarenessClient:
    """Opens its channel on first use: an aio channel belongs to the loop it was made on."""

    def __init__(self, address: str, token: str) -> None:
        self._address = address
        self._metadata = bearer_metadata(token)
        self._channel: grpc.aio.Channel | None = None
        self._stub_instance: pb_grpc.AwarenessAsyncStub | None = None

    @property
    def _stub(self) -> pb_grpc.AwarenessAsyncStub:
        if self._stub_instance is None:
            self._channel = open_channel(self._address)
            self._stub_instance = pb_grpc.AwarenessStub(self._channel)
        return self._stub_instance

    async def _connected(self) -> pb_grpc.AwarenessAsyncStub:
        """The stub, once the channel is ready or `CONNECT_PATIENCE` has passed.

        A channel in reconnect backoff fails calls at once; Awareness starting or restarting
        next to the Mind must not turn a tool call into an error for that reason alone.
        """
        stub = self._stub
        assert self._channel is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._channel.channel_ready(), CONNECT_PATIENCE)
        return stub

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel, self._stub_instance = None, None

    async def observe(
        self, call_id: str, adapter_id: str, action: str, args: dict[str, Any]
    ) -> pb.ToolCallResult:
        request = pb.ObserveRequest(
            call_id=call_id, adapter_id=adapter_id, action=action, args_json=json.dumps(args)
        )
        stub = await self._connected()
        return (await self._unary(stub.Observe, request)).result

    async def interact(
        self, call_id: str, adapter_id: str, action: str, args: dict[str, Any]
    ) -> pb.ToolCallResult:
        request = pb.InteractRequest(
            call_id=call_id, adapter_id=adapter_id, action=action, args_json=json.dumps(args)
        )
        stub = await self._connected()
        return (await self._unary(stub.Interact, request)).result

    async def register(self, call_id: str, name: str) -> pb.ToolCallResult:
        request = pb.RegisterAdapterRequest(call_id=call_id, name=name)
        stub = await self._connected()
        return (await self._unary(stub.RegisterAdapter, request)).result

    async def unregister(self, call_id: str, adapter_id: str) -> pb.ToolCallResult:
        request = pb.UnregisterAdapterRequest(call_id=call_id, adapter_id=adapter_id)
        stub = await self._connected()
        return (await self._unary(stub.UnregisterAdapter, request)).result

    async def _unary(
        self, method: grpc.aio.UnaryUnaryMultiCallable[Request, Response], request: Request
    ) -> Response:
        """The reply of a unary call; AwarenessLinkError when the call fails."""
        try:
            return await method(request, metadata=self._metadata, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            raise _link_error(exc) from exc

    async def subscribe(self, after_seq: int) -> AsyncIterator[pb.SubscribeObservationsResponse]:
        """Published batches after `after_seq`; AwarenessLinkError when the link drops."""
        call = self._stub.SubscribeObservations(
            pb.SubscribeObservationsRequest(after_seq=after_seq), metadata=self._metadata
        )
        try:
            async for batch in call:
                yield batch
        except grpc.aio.AioRpcError as exc:
            raise _link_error(exc) from exc
        finally:
            call.cancel()
