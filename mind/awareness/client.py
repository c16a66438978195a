"""A client of the Awareness service, authenticated with the shared service token.

The one place the Mind's awareness code speaks gRPC: a failed call raises `AwarenessLinkError`
(`mind.awareness.errors`), so the tools and the router stay free of it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import grpc

from mind.awareness.errors import AwarenessLinkError, JournalReset
from tobe.runtime.channel import ServiceClient
from tobe.runtime.server import DEFAULT_MAX_MESSAGE_BYTES
from tobe.v1 import awareness_pb2 as pb
from tobe.v1 import awareness_pb2_grpc as pb_grpc

CALL_TIMEOUT = 60.0
# How long a tool call waits for a link that is (re)connecting before it fails UNAVAILABLE: a
# channel in reconnect backoff fails calls at once, and Awareness starting or restarting next
# to the Mind must not turn a tool call into an error for that reason alone.
CONNECT_PATIENCE = 5.0


def _link_error(exc: grpc.aio.AioRpcError) -> AwarenessLinkError:
    if exc.code() is grpc.StatusCode.OUT_OF_RANGE:
        return JournalReset(exc.code().name, exc.details())
    return AwarenessLinkError(exc.code().name, exc.details())


class AwarenessClient:
    def __init__(self, address: str, token: str, *, max_media_bytes: int) -> None:
        """`max_media_bytes`: the largest object `get_media` is asked for; replies that large
        must fit through the channel."""
        receive = max(DEFAULT_MAX_MESSAGE_BYTES, max_media_bytes + 64 * 1024)
        self._awareness: ServiceClient[pb_grpc.AwarenessAsyncStub] = ServiceClient(
            address,
            token,
            pb_grpc.AwarenessStub,
            _link_error,
            timeout=CALL_TIMEOUT,
            max_receive_bytes=receive,
        )

    async def close(self) -> None:
        await self._awareness.close()

    async def adapters(self, patience: float = CONNECT_PATIENCE) -> list[pb.AdapterInfo]:
        """`patience`: how long to wait for the channel to connect (a status display wants an
        answer quickly, even "unreachable")."""
        stub = await self._awareness.ready(patience)
        reply = await self._awareness.unary(stub.ListAdapters, pb.ListAdaptersRequest())
        return list(reply.adapters)

    async def observe(
        self, call_id: str, adapter_id: str, action: str, args: dict[str, Any]
    ) -> pb.ToolCallResult:
        request = pb.ObserveRequest(
            call_id=call_id, adapter_id=adapter_id, action=action, args_json=json.dumps(args)
        )
        stub = await self._awareness.ready(CONNECT_PATIENCE)
        return (await self._awareness.unary(stub.Observe, request)).result

    async def interact(
        self, call_id: str, adapter_id: str, action: str, args: dict[str, Any]
    ) -> pb.ToolCallResult:
        request = pb.InteractRequest(
            call_id=call_id, adapter_id=adapter_id, action=action, args_json=json.dumps(args)
        )
        stub = await self._awareness.ready(CONNECT_PATIENCE)
        return (await self._awareness.unary(stub.Interact, request)).result

    async def register(self, call_id: str, name: str) -> pb.ToolCallResult:
        request = pb.RegisterAdapterRequest(call_id=call_id, name=name)
        stub = await self._awareness.ready(CONNECT_PATIENCE)
        return (await self._awareness.unary(stub.RegisterAdapter, request)).result

    async def unregister(self, call_id: str, adapter_id: str) -> pb.ToolCallResult:
        request = pb.UnregisterAdapterRequest(call_id=call_id, adapter_id=adapter_id)
        stub = await self._awareness.ready(CONNECT_PATIENCE)
        return (await self._awareness.unary(stub.UnregisterAdapter, request)).result

    async def get_media(self, ref: str, max_bytes: int) -> tuple[str, bytes]:
        """(media type, bytes) of a stored media object; AwarenessLinkError NOT_FOUND,
        INVALID_ARGUMENT or FAILED_PRECONDITION (larger than `max_bytes`) when refused."""
        request = pb.GetMediaRequest(ref=ref, max_bytes=max_bytes)
        stub = await self._awareness.ready(CONNECT_PATIENCE)
        reply = await self._awareness.unary(stub.GetMedia, request)
        return reply.mime_type, reply.data

    async def subscribe(self, after_seq: int) -> AsyncIterator[pb.SubscribeObservationsResponse]:
        """Published batches after `after_seq`; AwarenessLinkError when the link drops."""
        call = self._awareness.stub.SubscribeObservations(
            pb.SubscribeObservationsRequest(after_seq=after_seq), metadata=self._awareness.metadata
        )
        try:
            async for batch in call:
                yield batch
        except grpc.aio.AioRpcError as exc:
            raise _link_error(exc) from exc
        finally:
            call.cancel()
