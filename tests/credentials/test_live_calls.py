"""Revoking a credential ends the live streams it authenticated, on a real gRPC server.

The servicer streams behind the real `AuthInterceptor`; tokens name the credential directly
(the store's part, refusing a revoked token on its next call, is tested elsewhere).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import pytest

from mind.credentials import Identity
from mind.credentials.interceptor import AuthInterceptor, current_identity
from mind.credentials.live_calls import LiveCalls
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.runtime.server import ServiceSpec, start_server
from tobe.v1 import events_pb2, mind_pb2, mind_pb2_grpc

BOUND = 15.0  # generous: the cut is immediate, this only keeps a broken build from hanging
# Each response of the flooding stream: a few of them fill the HTTP/2 window.
BIG = "x" * 64 * 1024


# `after_id` asking for big events from the very first response.
FLOOD_AT_ONCE = -1


class Streams(mind_pb2_grpc.MindServicer):
    """Subscribe: one event, then either nothing more (a quiet feed) or, with
    `include_ephemeral`, big events without end (a feed the client does not keep up with);
    with `after_id=FLOOD_AT_ONCE`, big events from the first response on."""

    def __init__(self) -> None:
        self.streaming = asyncio.Event()
        self.ended: list[str] = []
        self._ending = asyncio.Condition()

    async def Subscribe(self, request, context):
        principal = current_identity().principal
        try:
            if request.after_id == FLOOD_AT_ONCE:
                self.streaming.set()
                yield mind_pb2.SubscribeResponse(event=events_pb2.Event(conversation_key=BIG * 16))
            yield mind_pb2.SubscribeResponse(event=events_pb2.Event(durable_id=1))
            self.streaming.set()
            if not request.include_ephemeral:
                await asyncio.Event().wait()
            durable_id = 1
            while True:
                durable_id += 1
                event = events_pb2.Event(durable_id=durable_id, conversation_key=BIG)
                yield mind_pb2.SubscribeResponse(event=event)
        finally:
            self.ended.append(principal)
            async with self._ending:
                self._ending.notify_all()

    async def wait_ended(self, principal: str) -> None:
        async with self._ending:
            await asyncio.wait_for(self._ending.wait_for(lambda: principal in self.ended), BOUND)


def token_of(credential_id: str) -> str:
    return f"token-of-{credential_id}"


async def identity_of(token: str) -> Identity | None:
    credential_id = token.removeprefix("token-of-")
    return Identity(credential_id=credential_id, kind="service", principal=credential_id)


async def serve(
    servicer: Streams, authenticate: Callable[[str], Awaitable[Identity | None]], live: LiveCalls
) -> AsyncIterator[mind_pb2_grpc.MindStub]:
    register = lambda server: mind_pb2_grpc.add_MindServicer_to_server(servicer, server)  # noqa: E731
    server = await start_server(
        [ServiceSpec("tobe.v1.Mind", register)],
        ["127.0.0.1:0"],
        interceptors=[AuthInterceptor(authenticate, live=live)],
    )
    channel = open_channel(f"127.0.0.1:{server.bound['127.0.0.1:0']}")
    try:
        yield mind_pb2_grpc.MindStub(channel)
    finally:
        await channel.close()
        await server.stop(grace=None)


@pytest.fixture
def servicer() -> Streams:
    return Streams()


@pytest.fixture
def live() -> LiveCalls:
    return LiveCalls()


@pytest.fixture
async def stub(servicer: Streams, live: LiveCalls) -> AsyncIterator[mind_pb2_grpc.MindStub]:
    async for each in serve(servicer, identity_of, live):
        yield each


def subscribe(
    stub: mind_pb2_grpc.MindStub,
    credential_id: str,
    *,
    flood: bool = False,
    at_once: bool = False,
) -> grpc.aio.UnaryStreamCall:
    request = mind_pb2.SubscribeRequest(
        include_ephemeral=flood or at_once, after_id=FLOOD_AT_ONCE if at_once else 0
    )
    return stub.Subscribe(request, metadata=bearer_metadata(token_of(credential_id)))


async def ending(call: grpc.aio.UnaryStreamCall) -> tuple[grpc.StatusCode, str]:
    """Read the rest of a stream; its status code and details."""

    async def drain() -> None:
        while await call.read() is not grpc.aio.EOF:
            pass

    with pytest.raises(grpc.aio.AioRpcError) as ended:
        await asyncio.wait_for(drain(), BOUND)
    return ended.value.code(), ended.value.details() or ""


async def test_revoking_a_credential_ends_each_of_its_live_streams_unauthenticated(
    stub: mind_pb2_grpc.MindStub, servicer: Streams, live: LiveCalls
) -> None:
    first, second = subscribe(stub, "cred_a"), subscribe(stub, "cred_a")
    other = subscribe(stub, "cred_b")
    for call in (first, second, other):
        assert (await asyncio.wait_for(call.read(), BOUND)).event.durable_id == 1

    assert live.revoke("cred_a") == 2
    for call in (first, second):
        assert await ending(call) == (
            grpc.StatusCode.UNAUTHENTICATED,
            "credential cred_a was revoked",
        )
    assert servicer.ended == ["cred_a", "cred_a"]  # the servicer's own cleanup ran
    # Another credential's stream is untouched, and a peer's cancel is just a cancel.
    assert not other.done()
    other.cancel()
    await servicer.wait_ended("cred_b")
    assert live.revoke("cred_b") == 0


async def test_a_stream_that_authenticated_just_before_the_revocation_is_refused_after_it(
    servicer: Streams, live: LiveCalls
) -> None:
    async def authenticated_then_revoked(token: str) -> Identity | None:
        identity = await identity_of(token)
        assert identity is not None
        # The revocation commits and cuts the credential's streams between this check and
        # the stream's registration.
        assert live.revoke(identity.credential_id) == 0
        return identity

    async for stub in serve(servicer, authenticated_then_revoked, live):
        assert await ending(subscribe(stub, "cred_a")) == (
            grpc.StatusCode.UNAUTHENTICATED,
            "credential cred_a was revoked",
        )
    assert servicer.ended == []  # the servicer never ran


async def test_a_revoked_stream_whose_client_stopped_reading_still_ends_unauthenticated(
    stub: mind_pb2_grpc.MindStub, servicer: Streams, live: LiveCalls
) -> None:
    call = subscribe(stub, "cred_a", flood=True)
    await asyncio.wait_for(servicer.streaming.wait(), BOUND)
    # Not reading: the server fills the window and waits inside a write.
    assert live.revoke("cred_a") == 1
    code, details = await ending(call)
    assert (code, details) == (grpc.StatusCode.UNAUTHENTICATED, "credential cred_a was revoked")
    assert servicer.ended == ["cred_a"]


async def test_a_stream_revoked_inside_its_first_write_still_ends_unauthenticated(
    stub: mind_pb2_grpc.MindStub, servicer: Streams, live: LiveCalls
) -> None:
    # The first response carries the call's headers; a cut inside it must not leave the
    # status unsendable (gRPC would refuse to send the headers twice).
    call = subscribe(stub, "cred_a", at_once=True)
    await asyncio.wait_for(servicer.streaming.wait(), BOUND)
    assert live.revoke("cred_a") == 1
    code, details = await ending(call)
    assert (code, details) == (grpc.StatusCode.UNAUTHENTICATED, "credential cred_a was revoked")
    assert servicer.ended == ["cred_a"]
