"""Pairing a device through a real Mind (and a real Face for the device's connection).

A gateway asks for a code on behalf of a signed-in principal, redeems it for the device, and
the device signs out; every refusal has its documented status and changes nothing; neither
the code nor the token reaches the Mind's log.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from helpers.face_client import FaceClient, refusal
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, running_mind
from sqlalchemy import create_engine, func, select

from mind.store.models import Credential, ManagementAudit, PairingCode
from tobe.runtime.channel import bearer_metadata
from tobe.v1 import face_pb2, mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

BOUND = 15.0  # only keeps a broken build from hanging


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MindProcess, FaceProcess]]:
    base = Path(tmp_path_factory.mktemp("pairing", numbered=True))
    with running_mind(base, script=None) as mind, running_face(mind) as face:
        yield mind, face


@pytest.fixture
async def stub(
    stack: tuple[MindProcess, FaceProcess],
) -> AsyncIterator[mind_pb2_grpc.MindStub]:
    mind, _face = stack
    channel = grpc.aio.insecure_channel(mind.address)
    try:
        yield mind_pb2_grpc.MindStub(channel)
    finally:
        await channel.close()


def who(principal: str, *scopes: str) -> mind_pb2.OnBehalfOf:
    return mind_pb2.OnBehalfOf(principal=principal, scopes=list(scopes))


async def make_code(
    stub: mind_pb2_grpc.MindStub, mind: MindProcess, principal: str = "alice", ttl: int = 0
) -> str:
    response = await stub.CreatePairingCode(
        mind_pb2.CreatePairingCodeRequest(on_behalf_of=who(principal, "chat"), ttl_seconds=ttl),
        metadata=mind.gateway_metadata,
        timeout=BOUND,
    )
    return response.pairing.code


async def redeem(
    stub: mind_pb2_grpc.MindStub, mind: MindProcess, code: str, device: str = "web: test"
) -> mind_pb2.RedeemPairingCodeResponse:
    return await stub.RedeemPairingCode(
        mind_pb2.RedeemPairingCodeRequest(code=code, device=device),
        metadata=mind.gateway_metadata,
        timeout=BOUND,
    )


def store_counts(mind: MindProcess) -> tuple[int, int, int, int]:
    """Credentials, revoked credentials, pairing codes and audit rows in the Mind's store."""
    engine = create_engine(mind.url)
    try:
        with engine.connect() as connection:
            count = select(func.count())
            return (
                connection.scalar(count.select_from(Credential)) or 0,
                connection.scalar(count.where(Credential.revoked_at.is_not(None))) or 0,
                connection.scalar(count.select_from(PairingCode)) or 0,
                connection.scalar(count.select_from(ManagementAudit)) or 0,
            )
    finally:
        engine.dispose()


def assert_not_logged(mind: MindProcess, *secrets: str) -> None:
    log = "\n".join(mind.output)
    for secret in secrets:
        assert secret not in log
        assert secret.replace("-", "") not in log


async def test_a_redeemed_code_signs_the_device_in_as_its_principal_with_chat_and_approve(
    stack: tuple[MindProcess, FaceProcess], stub: mind_pb2_grpc.MindStub
) -> None:
    mind, face = stack
    code = await make_code(stub, mind, "alice")
    redeemed = await redeem(stub, mind, code.lower().replace("-", " "), "web: Chromium on Linux")
    assert redeemed.principal == "alice"
    identity = (
        await stub.Authenticate(
            mind_pb2.AuthenticateRequest(token=redeemed.token),
            metadata=mind.gateway_metadata,
            timeout=BOUND,
        )
    ).identity
    assert (identity.principal, list(identity.scopes), identity.credential_id) == (
        "alice",
        ["chat", "approve"],
        redeemed.credential_id,
    )
    device = await FaceClient.connect(face.address, redeemed.token)
    try:
        reply = await device.command(list_conversations=face_pb2.ListConversationsCommand())
        assert reply.HasField("list_conversations")
    finally:
        await device.close()
    assert_not_logged(mind, code, redeemed.token)


async def _status(call: object) -> tuple[grpc.StatusCode, str]:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as refused:
        return refused.code(), refused.details() or ""
    raise AssertionError("the call was not refused")


async def test_refusals_have_their_documented_status_and_change_nothing(
    stack: tuple[MindProcess, FaceProcess], stub: mind_pb2_grpc.MindStub
) -> None:
    mind, _face = stack
    spent = await make_code(stub, mind, "bob")
    await redeem(stub, mind, spent)
    client = bearer_metadata(mind.client_tokens["bob"])
    gateway = mind.gateway_metadata
    before = store_counts(mind)

    def create(on_behalf_of: mind_pb2.OnBehalfOf, ttl: int = 0, metadata=gateway) -> object:
        request = mind_pb2.CreatePairingCodeRequest(on_behalf_of=on_behalf_of, ttl_seconds=ttl)
        return stub.CreatePairingCode(request, metadata=metadata, timeout=BOUND)

    def spend(code: str, metadata=gateway) -> object:
        request = mind_pb2.RedeemPairingCodeRequest(code=code, device="d")
        return stub.RedeemPairingCode(request, metadata=metadata, timeout=BOUND)

    def sign_out(token: str, metadata=gateway) -> object:
        return stub.SignOut(mind_pb2.SignOutRequest(token=token), metadata=metadata, timeout=BOUND)

    invalid, not_found = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND
    denied, unauthenticated = grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED
    cases = [
        (create(who("bob")), denied, "lacks scope 'chat'"),
        (create(who("bob", "approve")), denied, "lacks scope 'chat'"),
        (create(who("bob", "chat"), ttl=3601), invalid, "1 to 3600 seconds"),
        (create(who("bob", "chat"), ttl=-1), invalid, "1 to 3600 seconds"),
        (create(who("", "chat")), invalid, "invalid principal"),
        (create(who("b o b", "chat")), invalid, "invalid principal"),
        (create(who("bob", "chat"), metadata=client), denied, "for gateways"),
        (spend("not a code"), invalid, "malformed pairing code"),
        (spend(""), invalid, "malformed pairing code"),
        (spend("00000-00000"), not_found, "not recognised, already used or expired"),
        (spend(spent), not_found, "not recognised, already used or expired"),
        (spend("00000-00000", metadata=client), denied, "for gateways"),
        (sign_out(""), unauthenticated, "invalid, revoked or expired client credential"),
        (sign_out("tobe_x_y"), unauthenticated, "invalid, revoked or expired client credential"),
        (sign_out(mind.gateway_token), unauthenticated, "invalid, revoked or expired client"),
        (sign_out(mind.client_tokens["bob"], metadata=client), denied, "for gateways"),
    ]
    for call, code, words in cases:
        status, details = await _status(call)
        assert (status, words in details) == (code, True), (status, details)
    assert store_counts(mind) == before
    assert_not_logged(mind, spent)


async def test_signing_out_ends_the_devices_connections_and_its_token_at_once(
    stack: tuple[MindProcess, FaceProcess], stub: mind_pb2_grpc.MindStub
) -> None:
    mind, face = stack
    redeemed = await redeem(stub, mind, await make_code(stub, mind, "carol"), "web: phone")
    device = await FaceClient.connect(face.address, redeemed.token)
    other = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        signed_out = await stub.SignOut(
            mind_pb2.SignOutRequest(token=redeemed.token),
            metadata=mind.gateway_metadata,
            timeout=BOUND,
        )
        assert signed_out.credential_id == redeemed.credential_id
        closed = await device.wait_closed(BOUND)
        assert closed is not None and closed.code() == grpc.StatusCode.UNAUTHENTICATED
        # Only the signed-out credential's connections end.
        reply = await other.command(list_conversations=face_pb2.ListConversationsCommand())
        assert reply.HasField("list_conversations")
    finally:
        await device.close()
        await other.close()
    status, _details = await _status(
        stub.Authenticate(
            mind_pb2.AuthenticateRequest(token=redeemed.token),
            metadata=mind.gateway_metadata,
            timeout=BOUND,
        )
    )
    assert status == grpc.StatusCode.UNAUTHENTICATED
    refused = await asyncio.wait_for(refusal(face.address, redeemed.token), BOUND)
    assert refused == grpc.StatusCode.UNAUTHENTICATED
    status, _details = await _status(
        stub.SignOut(
            mind_pb2.SignOutRequest(token=redeemed.token),
            metadata=mind.gateway_metadata,
            timeout=BOUND,
        )
    )
    assert status == grpc.StatusCode.UNAUTHENTICATED
    assert_not_logged(mind, redeemed.token)
