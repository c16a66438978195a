"""`tobe admin credentials revoke` says how many live connections it really closed: a client's
connections are the Faces', wherever they are (gRPC clients like `tobe chat`, browser sockets,
on several Faces), and each Face reports how many of them it closed."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from helpers.admin_cli import Admin
from helpers.eventually import eventually_async
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess, MindDirect, face_env
from helpers.mind_process import MindProcess
from helpers.web_client import WebClient

from tobe.v1 import mind_pb2

pytestmark = pytest.mark.e2e

BOUND = 15.0  # the close is immediate; this only keeps a broken build from hanging


async def create_client(admin: Admin, principal: str) -> tuple[str, str]:
    created = await asyncio.to_thread(
        admin.json, "credentials", "create", "--kind", "client", "--principal", principal,
        "--scope", "chat",
    )  # fmt: skip
    return created["credential"]["id"], created["secret"]


async def subscribers(admin: Admin) -> int:
    status = await asyncio.to_thread(admin.json, "status")
    return int(status["gateway_subscribers"])


async def until_unsubscribed(admin: Admin, count: int) -> None:
    """Wait until the Mind saw a gateway this test started go (the stack is shared)."""
    await eventually_async(
        lambda: subscribers(admin),
        until=lambda now: now == count,
        what=f"{count} gateway subscription(s) left on the Mind",
    )


async def test_revoke_counts_the_client_connections_every_face_closed(
    stack: tuple[MindProcess, FaceProcess],
) -> None:
    mind, face = stack
    admin = Admin(mind.data_dir)
    credential_id, secret = await create_client(admin, "erin")
    before = await subscribers(admin)
    env = face_env(mind)
    env["TOBE_DATA_DIR"] = str(mind.data_dir / "face-c")
    face_c = FaceProcess(env, mind.address)
    chats: list[FaceClient] = []
    browser: WebClient | None = None
    try:
        await asyncio.to_thread(face_c.start)
        for address in (face.address, face.address, face_c.address):
            chats.append(await FaceClient.connect(address, secret))
        browser = await WebClient.connect(face_c.web_address, secret)

        revoked = await asyncio.to_thread(admin.run, "credentials", "revoke", credential_id)
        assert f"Revoked {credential_id}; closed 4 live connection(s)." in revoked.stdout
        assert "did not report" not in revoked.stdout
        for chat in chats:
            ended = await chat.wait_closed(BOUND)
            assert ended is not None and ended.code() == grpc.StatusCode.UNAUTHENTICATED
        assert await browser.wait_closed() == (4016, "credential revoked")
    finally:
        for chat in chats:
            await chat.close()
        if browser is not None:
            await browser.close()
        face_c.kill()
    await until_unsubscribed(admin, before)


async def test_revoke_of_an_unconnected_client_closes_none_as_every_face_reports(
    stack: tuple[MindProcess, FaceProcess],
) -> None:
    mind, _face = stack
    admin = Admin(mind.data_dir)
    credential_id, _secret = await create_client(admin, "frank")
    revoked = await asyncio.to_thread(admin.json, "credentials", "revoke", credential_id)
    assert (revoked["disconnected"], revoked["unreported_gateways"]) == (0, 0)


async def test_revoke_says_when_a_gateway_did_not_report_in_time(
    stack: tuple[MindProcess, FaceProcess],
) -> None:
    mind, _face = stack
    admin = Admin(mind.data_dir)
    credential_id, _secret = await create_client(admin, "grace")
    before = await subscribers(admin)
    direct = MindDirect(mind)
    # A gateway that promises reports and never sends one.
    silent = direct.stub.Subscribe(
        mind_pb2.SubscribeRequest(after_id=0, reports_revocations=True),
        metadata=mind.gateway_metadata,
    )
    try:
        while not (await asyncio.wait_for(silent.read(), BOUND)).HasField("replay_done"):
            pass
        revoked = await asyncio.to_thread(admin.run, "credentials", "revoke", credential_id)
    finally:
        silent.cancel()
        await direct.close()
    await until_unsubscribed(admin, before)
    assert (
        f"Revoked {credential_id}; closed 0 live connection(s). 1 gateway(s) did not report in time"
    ) in " ".join(revoked.stdout.split())
