"""The Hand's stream to the Mind: a stream the Mind ends is attached again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc

from hand import Hand
from tobe.v1 import hand_pb2, hand_pb2_grpc


class EndingHandLink(hand_pb2_grpc.HandLinkServicer):
    """Welcomes every stream, then ends it with status OK."""

    def __init__(self) -> None:
        self.attaches = 0
        self.attached_again = asyncio.Event()

    async def Attach(  # noqa: N802 - gRPC method name
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
