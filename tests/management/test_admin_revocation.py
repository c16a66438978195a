"""Online revocation disconnects the peer at once and every later use is refused.

A real Mind (and a real Face in front of it); the Hand attaches with the Python SDK and the
client connects with a plain FaceGateway client; the revocation goes through `tobe admin`.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from admin_cli import Admin
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess

from hand import Hand, HandRefused
from tobe.v1 import face_pb2

pytestmark = pytest.mark.e2e

BOUND = 15.0  # generous: the close is immediate, this only keeps a broken build from hanging


def admin_for(mind: MindProcess) -> Admin:
    return Admin(mind.data_dir)


async def cli(admin: Admin, *args: str) -> dict:
    """The CLI runs its own event loop, so it gets a thread of its own."""
    return await asyncio.to_thread(admin.json, *args)


def laptop_hand() -> Hand:
    hand = Hand("laptop", version="1.2.3")

    @hand.tool
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return hand


async def test_revoking_a_connected_hand_closes_its_stream_and_refuses_reconnect(
    stack: tuple[MindProcess, FaceProcess],
) -> None:
    mind, _face = stack
    admin = admin_for(mind)
    created = await cli(admin, "credentials", "create", "--kind", "hand", "--principal", "laptop")
    hand = laptop_hand()
    serving = asyncio.create_task(hand.serve(mind.address, created["secret"]))
    try:
        await asyncio.wait_for(hand.attached.wait(), BOUND)
        status = await cli(admin, "status")
        (attached,) = status["hands"]
        assert (attached["name"], attached["principal"]) == ("laptop", "laptop")
        assert (attached["version"], attached["tools"]) == ("1.2.3", 1)

        revoked = await cli(admin, "credentials", "revoke", created["credential"]["id"])
        assert revoked["disconnected"] == 1
        with pytest.raises(HandRefused) as closed:
            await asyncio.wait_for(serving, BOUND)
        assert closed.value.code == grpc.StatusCode.UNAUTHENTICATED
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)

    with pytest.raises(HandRefused) as refused:
        await asyncio.wait_for(laptop_hand().serve(mind.address, created["secret"]), BOUND)
    assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert (await cli(admin, "status"))["hands"] == []


async def test_revoking_a_connected_client_closes_its_face_connection_and_refuses_reconnect(
    stack: tuple[MindProcess, FaceProcess],
) -> None:
    mind, face = stack
    admin = admin_for(mind)
    (alice,) = await cli(admin, "credentials", "list", "--principal", "alice")
    client = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    bob = await FaceClient.connect(face.address, mind.client_tokens["bob"])
    try:
        assert (await cli(admin, "status"))["gateway_subscribers"] >= 1
        await cli(admin, "credentials", "revoke", alice["id"])
        status = await client.wait_closed(BOUND)
        assert status is not None and status.code() == grpc.StatusCode.UNAUTHENTICATED
        # Only the revoked credential's connections close: bob's still answers commands.
        reply = await bob.command(list_conversations=face_pb2.ListConversationsCommand())
        assert reply.HasField("list_conversations")
        assert not bob.closed.is_set()
    finally:
        await client.close()
        await bob.close()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await asyncio.wait_for(FaceClient.connect(face.address, mind.client_tokens["alice"]), BOUND)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
