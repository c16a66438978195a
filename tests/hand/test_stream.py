"""The Hand's stream to the Mind: a stream the Mind ends is attached again, every attempt dials
afresh, and a credential that cannot be sent is refused before dialing."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import grpc
import pytest
from helpers.eventually import eventually_async

from hand import Hand, HandRefused, _hand
from tobe.runtime.backoff import Backoff
from tobe.runtime.channel import open_channel
from tobe.runtime.tls import ClientTls
from tobe.v1 import hand_pb2, hand_pb2_grpc


class EndingHandLink(hand_pb2_grpc.HandLinkServicer):
    """Welcomes every stream, then ends it with status OK."""

    def __init__(self) -> None:
        self.attaches = 0
        self.attached_again = asyncio.Event()

    async def Attach(
        self,
        request_iterator: AsyncIterator[hand_pb2.AttachRequest],
        context: grpc.aio.ServicerContext[hand_pb2.AttachRequest, hand_pb2.AttachResponse],
    ) -> AsyncIterator[hand_pb2.AttachResponse]:
        self.attaches += 1
        if self.attaches > 1:
            self.attached_again.set()
        yield hand_pb2.AttachResponse(
            welcome=hand_pb2.HandWelcome(hand_id="h_1", hand_name="laptop")
        )


async def test_a_stream_the_mind_ends_with_status_ok_is_attached_again() -> None:
    link = EndingHandLink()
    server = grpc.aio.server()
    hand_pb2_grpc.add_HandLinkServicer_to_server(link, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    serving = asyncio.create_task(Hand("laptop").serve(f"127.0.0.1:{port}", "secret"))
    try:
        await asyncio.wait_for(link.attached_again.wait(), 10)
        assert not serving.done()
    finally:
        serving.cancel()
        await server.stop(None)
        with contextlib.suppress(asyncio.CancelledError):
            await serving


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


async def test_each_attempt_dials_on_a_fresh_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A channel kept across attempts runs its own reconnect backoff and fails calls at once
    while it waits, so attempts after the Mind was back kept failing: reattaching took ~40 s.
    gRPC shares subchannels between channels process-wide, so each needs a pool of its own."""
    opened: list[tuple[grpc.aio.Channel, list[tuple[str, int | str]]]] = []

    def recording(
        target: str,
        *,
        tls: ClientTls | None = None,
        extra_options: list[tuple[str, int | str]] | None = None,
    ) -> grpc.aio.Channel:
        channel = open_channel(target, tls=tls, extra_options=extra_options)
        opened.append((channel, extra_options or []))
        return channel

    monkeypatch.setattr(_hand, "open_channel", recording)
    monkeypatch.setattr(_hand, "Backoff", lambda: Backoff(initial=0.01, maximum=0.02, jitter=0))
    serving = asyncio.create_task(Hand("laptop").serve(closed_port(), "secret"))
    try:
        await eventually_async(lambda: len(opened), 10, until=lambda n: n >= 3, what="3 attempts")
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    assert len({id(channel) for channel, _ in opened}) == len(opened)
    assert all(("grpc.use_local_subchannel_pool", 1) in options for _, options in opened)


@pytest.mark.parametrize("token", ["", "<hand credential>", "tök", "tobe_a\nb"])
async def test_a_credential_that_cannot_be_sent_is_refused_before_dialing(token: str) -> None:
    with pytest.raises(HandRefused) as refused:
        await asyncio.wait_for(Hand("laptop").serve(closed_port(), token), 5)
    assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert "the Mind" not in str(refused.value)  # it never reached one
