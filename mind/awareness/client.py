"""A client of the Awareness service, authenticated with the shared service token."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import grpc

from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.v1 import awareness_pb2 as pb
from tobe.v1 import awareness_pb2_grpc as pb_grpc

CALL_TIMEOUT = 60.0


class AwarenessClient:
    """Opens its channel on first use: an aio channel belongs to the loop it was made on."""

    def __init__(self, address: str, token: str) -> None:
        self._address = address
        self._metadata = bearer_metadata(token)
        self._channel: grpc.aio.Channel | None = None
        self._stub_instance: pb_grpc.AwarenessStub | None = None

    @property
    def _stub(self) -> pb_grpc.AwarenessStub:
        if self._stub_instance is None:
            self._channel = open_channel(self._address)
            self._stub_instance = pb_grpc.AwarenessStub(self._channel)
        return self._stub_instance

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
        reply = await self._stub.Observe(request, metadata=self._metadata, timeout=CALL_TIMEOUT)
        return reply.result

    async def interact(
        self, call_id: str, adapter_id: str, action: str, args: dict[str, Any]
    ) -> pb.ToolCallResult:
        request = pb.InteractRequest(
            call_id=call_id, adapter_id=adapter_id, action=action, args_json=json.dumps(args)
        )
        reply = await self._stub.Interact(request, metadata=self._metadata, timeout=CALL_TIMEOUT)
        return reply.result

    async def register(self, call_id: str, name: str) -> pb.ToolCallResult:
        request = pb.RegisterAdapterRequest(call_id=call_id, name=name)
        reply = await self._stub.RegisterAdapter(
            request, metadata=self._metadata, timeout=CALL_TIMEOUT
        )
        return reply.result

    async def unregister(self, call_id: str, adapter_id: str) -> pb.ToolCallResult:
        request = pb.UnregisterAdapterRequest(call_id=call_id, adapter_id=adapter_id)
        reply = await self._stub.UnregisterAdapter(
            request, metadata=self._metadata, timeout=CALL_TIMEOUT
        )
        return reply.result

    async def subscribe(self, after_seq: int) -> AsyncIterator[pb.SubscribeObservationsResponse]:
        """Published batches after `after_seq`; raises grpc.aio.AioRpcError when the link drops."""
        call = self._stub.SubscribeObservations(
            pb.SubscribeObservationsRequest(after_seq=after_seq), metadata=self._metadata
        )
        try:
            async for batch in call:
                yield batch
        finally:
            call.cancel()

