"""Requests for a conversation another Mind owns go to that Mind (several Minds, one database).

Any Mind accepts any request. A unary call of the Mind service that names a conversation
(`conversation_key`) is served here when this Mind holds the conversation's lease or can take
it (`mind.cluster.leases`); when another live Mind owns it, the call is forwarded to that
Mind's advertised address as it came — the same request bytes, the caller's credential (every
Mind reads the one credentials table), the caller's remaining deadline — and its answer or
status is relayed unchanged. A forwarded call carries `tobe-forwarded-by`; the Mind that gets
one serves it or refuses it, and never forwards it again, so two Minds that disagree for a
moment about an owner cannot bounce a call between them.

When the owner cannot be reached (it died and its lease has not run out yet), the call waits,
within its deadline, for the lease to run out, takes the conversation over and resumes it as a
restart does, and is served here: a Mind's death costs the calls in flight to it, and the
next calls wait at most `[mind] lease_seconds` instead of failing.

A call that names its conversation another way (an approval by its id) is routed the same,
through the key its `keys` entry finds for the request.

Minds that serve TLS dial each other with it (`peer_tls`).

Forwarding rather than naming the owner to the caller keeps every caller simple: a Face, `tobe
chat` through it and any other gateway see one Mind, and a Face needs only one address that
answers. Streams are not forwarded: a subscriber is served by the Mind it reached, which reads
the shared outbox and hears the other Minds' commits (`mind.cluster.membership`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any, cast

import grpc
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from mind.cluster.errors import OwnedElsewhere
from mind.cluster.leases import Leases
from mind.management.ca_copies import CA_FILE
from tobe.config import ServerTlsSettings
from tobe.runtime.channel import open_channel
from tobe.runtime.tls import ClientTls
from tobe.v1 import mind_pb2, mind_pb2_grpc

log = logging.getLogger(__name__)

FORWARDED_BY = "tobe-forwarded-by"
# Metadata that belongs to the hop, not to the call.
_HOP_ONLY = {"user-agent", "grpc-accept-encoding", "grpc-timeout", FORWARDED_BY}

# How often a call whose owner cannot be reached tries to take the conversation over.
TAKEOVER_POLL = 0.25

Handler = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]
# The conversation a request acts on, for a call whose request has no `conversation_key`.
KeyOf = Callable[[Any], Awaitable[str]]


def routed_methods(keyed: Collection[str] = ()) -> list[MethodDescriptor]:
    """The Mind service's unary calls whose request names a conversation (or is `keyed`)."""
    service = mind_pb2.DESCRIPTOR.services_by_name["Mind"]
    return [
        method
        for method in service.methods
        if not method.client_streaming
        and not method.server_streaming
        and ("conversation_key" in method.input_type.fields_by_name or method.name in keyed)
    ]


class Forwarder:
    """Routes the servicer's conversation calls to the conversation's owner."""

    def __init__(
        self,
        leases: Leases,
        node_id: str,
        *,
        lease_seconds: float,
        adopt: Callable[[str], Awaitable[None]],
        tls: ClientTls | None = None,
        keys: dict[str, KeyOf] | None = None,
    ) -> None:
        self.leases = leases
        self.keys = dict(keys or {})
        self.node_id = node_id
        self.lease_seconds = lease_seconds
        # Takes a conversation over and resumes it (`ConversationActors.adopt`); raises
        # OwnedElsewhere while its owner holds it.
        self.adopt = adopt
        self.tls = tls
        self._channels: dict[str, grpc.aio.Channel] = {}

    def routing(self, servicer: mind_pb2_grpc.MindServicer) -> mind_pb2_grpc.MindServicer:
        """`servicer`, with each routed call going to the owner first."""
        routes = {
            method.name: self._route(method, getattr(servicer, method.name))
            for method in routed_methods(self.keys)
        }
        return cast(mind_pb2_grpc.MindServicer, _Routed(servicer, routes))

    def _route(self, method: MethodDescriptor, local: Handler) -> Handler:
        reply_type = GetMessageClass(method.output_type)
        path = f"/{method.containing_service.full_name}/{method.name}"
        key_of = self.keys.get(method.name)

        async def route(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            forwarded = _forwarded(context)
            if key_of is None:
                key = request.conversation_key
            else:
                key = "" if forwarded else await key_of(request)
            if key and not forwarded:
                try:
                    await self.leases.acquire(key)
                except OwnedElsewhere as owner:
                    try:
                        return await self._forward(owner, path, reply_type, request, context)
                    except _Unreached:
                        await self._take_over(owner, context)
            return await local(request, context)

        return route

    async def _forward(
        self,
        owner: OwnedElsewhere,
        path: str,
        reply_type: type[Message],
        request: Message,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> Any:
        if not owner.address:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(owner))
        channel = self._channels.get(owner.address)
        if channel is None:
            channel = self._channels[owner.address] = open_channel(owner.address, tls=self.tls)
        call: grpc.aio.UnaryUnaryMultiCallable[Message, Any] = channel.unary_unary(
            path,
            request_serializer=lambda message: message.SerializeToString(),
            response_deserializer=reply_type.FromString,
        )
        metadata = [
            (name, value)
            for name, value in context.invocation_metadata() or ()
            if name not in _HOP_ONLY and isinstance(value, str)
        ]
        metadata.append((FORWARDED_BY, self.node_id))
        try:
            return await call(request, metadata=metadata, timeout=context.time_remaining())
        except grpc.aio.AioRpcError as failure:
            unreached = channel.get_state() != grpc.ChannelConnectivity.READY
            if failure.code() == grpc.StatusCode.UNAVAILABLE and unreached:
                raise _Unreached from None
            await context.abort(failure.code(), failure.details() or "")

    async def _take_over(
        self, owner: OwnedElsewhere, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """The owner cannot be reached (it died, most likely): wait, within the call's
        deadline, for its lease to run out, then take the conversation over here and resume
        it (`adopt`) before serving the call. UNAVAILABLE when the owner keeps renewing."""
        remaining = context.time_remaining()
        patience = self.lease_seconds + 2 if remaining is None else remaining - 1
        loop = asyncio.get_running_loop()
        end = loop.time() + patience
        while loop.time() < end:
            try:
                await self.adopt(owner.key)
                return
            except OwnedElsewhere:
                await asyncio.sleep(TAKEOVER_POLL)
        await context.abort(
            grpc.StatusCode.UNAVAILABLE,
            f"the Mind {owner.node_id!r} that serves conversation {owner.key!r} cannot be "
            f"reached at {owner.address}, and it still holds the conversation: retry",
        )

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()


def _forwarded(context: grpc.aio.ServicerContext[Any, Any]) -> bool:
    return any(name == FORWARDED_BY for name, _ in context.invocation_metadata() or ())


def peer_tls(tls: ServerTlsSettings) -> ClientTls | None:
    """How a Mind that serves TLS dials the others: trusting the CA beside its certificate
    (`tobe admin tls init` makes one for every Mind's names; without it, the system roots),
    and presenting its own certificate, which Minds requiring client certificates ask for.
    None (plaintext) when it serves none."""
    if tls.cert_file is None or tls.key_file is None:
        return None
    ca = tls.cert_file.parent / CA_FILE
    return ClientTls(
        root_certificates=ca.read_bytes() if ca.is_file() else None,
        certificate_chain=tls.cert_file.read_bytes(),
        private_key=tls.key_file.read_bytes(),
    )


class _Unreached(Exception):
    """No Mind answered at the owner's address."""


class _Routed:
    """The servicer as gRPC sees it: routed calls replaced, the rest its own."""

    def __init__(self, servicer: object, routes: dict[str, Handler]) -> None:
        self._servicer = servicer
        self.__dict__.update(routes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._servicer, name)
