"""Online revocation disconnects the peer at once and every later use is refused.

A real Mind (and a real Face in front of it); the Hand attaches with the Python SDK, the
client connects with a plain FaceGateway client and a gateway subscribes to the Mind directly;
the revocation goes through `tobe admin`.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from helpers.admin_cli import Admin
from helpers.face_client import FaceClient, refusal
from helpers.face_process import FaceProcess, MindDirect, face_env, wait_for_line
from helpers.mind_events import replay_async
from helpers.mind_process import MindProcess

from hand import Hand, HandRefused
from tobe.runtime.channel import bearer_metadata
from tobe.v1 import events_pb2, face_pb2, mind_pb2

pytestmark = pytest.mark.e2e

BOUND = 15.0  # generous: the close is immediate, this only keeps a broken build from hanging


def admin_for(mind: MindProcess) -> Admin:
    return Admin(mind.data_dir)


async def cli(admin: Admin, *args: str) -> dict:
    """The CLI runs its own event loop, so it gets a thread of its own."""
    return await asyncio.to_thread(admin.json, *args)


async def create_gateway(admin: Admin, principal: str) -> tuple[str, str]:
    """A new gateway (service) credential: its id and secret."""
    created = await cli(
        admin,
        "credentials",
        "create",
        "--kind",
        "service",
        "--principal",
        principal,
        "--scope",
        "gateway",
    )
    return created["credential"]["id"], created["secret"]


async def replayed(call: grpc.aio.UnaryStreamCall) -> None:
    """Read a Subscribe up to its ReplayDone."""
    while not (await asyncio.wait_for(call.read(), BOUND)).HasField("replay_done"):
        pass


async def until_closed(
    call: grpc.aio.UnaryStreamCall,
) -> tuple[list[events_pb2.Event], grpc.StatusCode | None, str]:
    """The events a Subscribe delivers until it ends, and its status (None: still open)."""
    events: list[events_pb2.Event] = []

    async def read() -> None:
        while (item := await call.read()) is not grpc.aio.EOF:
            if item.HasField("event"):
                events.append(item.event)

    try:
        await asyncio.wait_for(read(), BOUND)
    except TimeoutError:
        call.cancel()
        return events, None, "still open"
    except grpc.aio.AioRpcError as exc:
        return events, exc.code(), exc.details() or ""
    return events, grpc.StatusCode.OK, ""


async def revocation_event_id(direct: MindDirect, credential_id: str) -> int:
    """The durable id of the credential's `credential_revoked` event, from a full replay."""
    events, _ = await replay_async(direct.stub, direct.mind.gateway_metadata, timeout=BOUND)
    ids = [e.durable_id for e in events if e.credential_revoked.credential_id == credential_id]
    assert ids, f"no credential_revoked event for {credential_id}"
    return ids[0]


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
    refused = await asyncio.wait_for(refusal(face.address, mind.client_tokens["alice"]), BOUND)
    assert refused == grpc.StatusCode.UNAUTHENTICATED


async def test_revoking_a_gateway_credential_ends_its_live_subscribe(
    stack: tuple[MindProcess, FaceProcess],
) -> None:
    mind, _face = stack
    admin = admin_for(mind)
    credential_id, secret = await create_gateway(admin, "gateway-b")
    direct = MindDirect(mind)
    feed = direct.stub.Subscribe(
        mind_pb2.SubscribeRequest(after_id=0, include_ephemeral=True),
        metadata=bearer_metadata(secret),
    )
    try:
        await replayed(feed)
        revoked = await cli(admin, "credentials", "revoke", credential_id)
        # Events of every principal, committed after the revocation.
        for principal in ("alice", "bob"):
            await direct.create(f"p_after-gateway-revoked-{principal}", principal)
        delivered, code, details = await until_closed(feed)
        revocation = await revocation_event_id(direct, credential_id)
    finally:
        feed.cancel()
        await direct.close()
    assert (code, details) == (
        grpc.StatusCode.UNAUTHENTICATED,
        f"credential {credential_id} was revoked",
    )
    assert [e.durable_id for e in delivered if e.durable_id >= revocation] == []
    assert revoked["disconnected"] == 1


async def test_revoking_a_faces_gateway_credential_ends_its_upstream_feed(
    stack: tuple[MindProcess, FaceProcess],
) -> None:
    mind, face = stack
    admin = admin_for(mind)
    credential_id, secret = await create_gateway(admin, "face-b")
    env = face_env(mind, mind_token=secret)
    env["TOBE_DATA_DIR"] = str(mind.data_dir / "face-b")
    face_b = FaceProcess(env, mind.address)
    clients: list[FaceClient] = []
    direct = MindDirect(mind)
    try:
        await asyncio.to_thread(face_b.start)
        for address in (face_b.address, face.address):
            client = await FaceClient.connect(address, mind.client_tokens["bob"])
            clients.append(client)
            await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        behind_b, control = clients

        revoked = await cli(admin, "credentials", "revoke", credential_id)
        assert revoked["disconnected"] == 1  # Face B's one upstream subscription
        await wait_for_line(face_b, f"credential {credential_id} was revoked", BOUND)

        # Bob sees a later event through the other Face; Face B no longer serves any.
        key = "p_after-face-b-revoked"
        await direct.create(key, "bob")
        await control.wait_event(lambda event: event.conversation_key == key, BOUND)
        assert [e for e in behind_b.events if e.conversation_key == key] == []
        # Face B's clients are told it can no longer serve them, instead of waiting forever.
        ended = await behind_b.wait_closed(BOUND)
        assert ended is not None and ended.code() == grpc.StatusCode.UNAVAILABLE
        assert "the Face's own credential was refused" in (ended.details() or "")
    finally:
        for client in clients:
            await client.close()
        await direct.close()
        face_b.kill()
