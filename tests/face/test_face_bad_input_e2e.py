"""Bad input gets the documented status and never disturbs another connection."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from dataclasses import dataclass

import grpc
import pytest
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess, running_face, wait_for_line
from helpers.mind_process import MindProcess, issue_token

from tobe.runtime.channel import bearer_metadata
from tobe.v1 import face_pb2

pytestmark = pytest.mark.e2e
INVALID_ARGUMENT = 3
FAILED_PRECONDITION = 9
MAX_FRAME = 4096
METHOD = "/tobe.v1.FaceGateway/Connect"


async def raw_exchange(
    address: str, frames: list[bytes], token: str | None
) -> tuple[list[face_pb2.ConnectResponse], RawStatus | None]:
    """Send raw frames, half-close, and collect what comes back until the stream ends.

    With no frames the call writes nothing at all and only reads: that is how a refusal made
    on the call's metadata alone (the credential) is observed. Writing there would race the
    refusal, and a client whose write loses that race reports `INTERNAL: Internal error from
    Core` instead of the status the gateway sent.
    """
    async with grpc.aio.insecure_channel(address) as channel:
        metadata = bearer_metadata(token) if token else ()
        call = channel.stream_stream(METHOD)(metadata=metadata, timeout=30)
        # The gateway may end the stream before reading every frame; a write after that fails
        # on the client side, and the status that counts is the one the gateway sent.
        if frames:
            with contextlib.suppress(grpc.aio.AioRpcError, grpc.aio.UsageError):
                for raw in frames:
                    await call.write(raw)
                await call.done_writing()
        received = []
        with contextlib.suppress(grpc.aio.AioRpcError):
            while (raw := await call.read()) is not grpc.aio.EOF:
                received.append(face_pb2.ConnectResponse.FromString(raw))
        code = await call.code()
        if code == grpc.StatusCode.OK:
            return received, None
        return received, RawStatus(code, await call.details())


@dataclass
class RawStatus:
    status: grpc.StatusCode
    message: str

    def code(self) -> grpc.StatusCode:
        return self.status

    def details(self) -> str:
        return self.message


def frame(**fields: object) -> bytes:
    return face_pb2.ConnectRequest(**fields).SerializeToString()


HELLO = frame(request_id="h", hello=face_pb2.Hello(client_name="raw"))


async def test_bad_connections_get_their_status_and_others_keep_working(
    mind: MindProcess,
) -> None:
    token = mind.client_tokens["alice"]
    with running_face(mind, max_frame_bytes=str(MAX_FRAME)) as face:
        bystander = await FaceClient.connect(face.address, token)
        try:
            await bystander.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
            await check_bad_input(face, token)
            # The connection opened before all of that still works, with no gap in its seq.
            reply = await bystander.command(list_conversations=face_pb2.ListConversationsCommand())
            assert reply.HasField("list_conversations")
            assert bystander.status is None
        finally:
            await bystander.close()
        # A subscribed client that goes away is dropped at once, not at Face's next write.
        connection_id = bystander.welcome.connection_id
        try:
            await wait_for_line(face, f"connection {connection_id} (alice) closed: CANCELLED")
        except TimeoutError:
            raise AssertionError("\n".join(face.output[-30:])) from None


async def check_bad_input(face: FaceProcess, token: str) -> None:
    address = face.address
    list_command = frame(request_id="l", list_conversations=face_pb2.ListConversationsCommand())

    # A credential is checked before any frame is read: the refusal needs no hello.
    _, status = await raw_exchange(address, [], None)
    assert status.code() == grpc.StatusCode.UNAUTHENTICATED
    _, status = await raw_exchange(address, [], "tobe_abcdefgh_notarealsecret123")
    assert status.code() == grpc.StatusCode.UNAUTHENTICATED

    _, status = await raw_exchange(address, [list_command], token)
    assert status.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert status.details() == "hello required"

    _, status = await raw_exchange(address, [b"\xff\xff\xff\xff"], token)
    assert status.code() == grpc.StatusCode.INVALID_ARGUMENT

    received, status = await raw_exchange(address, [HELLO, b"\x0a\xff\xff"], token)
    assert status.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [f.seq for f in received] == list(range(1, len(received) + 1))

    huge = frame(request_id="x", send_chat=face_pb2.SendChatCommand(text="a" * MAX_FRAME))
    _, status = await raw_exchange(address, [HELLO, huge], token)
    assert status.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

    # Errors of one command leave the connection open: each gets its reply, in order.
    unknown = frame(request_id="u")
    no_id = frame(list_conversations=face_pb2.ListConversationsCommand())
    long_id = frame(request_id="i" * 200, list_conversations=face_pb2.ListConversationsCommand())
    second_hello = frame(request_id="h2", hello=face_pb2.Hello())
    received, status = await raw_exchange(
        address, [HELLO, unknown, no_id, long_id, second_hello, list_command], token
    )
    assert status is None
    assert [f.seq for f in received] == [1, 2, 3, 4, 5, 6]
    replies = [f.reply for f in received[1:]]
    assert [r.error.code for r in replies[:4]] == [
        INVALID_ARGUMENT,
        INVALID_ARGUMENT,
        INVALID_ARGUMENT,
        FAILED_PRECONDITION,
    ]
    assert replies[0].request_id == "u"
    assert replies[4].request_id == "l" and replies[4].HasField("list_conversations")


def admin_cli(mind: MindProcess, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "tobe", "admin", *args, "--json"],
        env=mind.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


async def test_revoking_a_credential_closes_its_connections(
    mind: MindProcess, face: FaceProcess
) -> None:
    token = await asyncio.to_thread(
        issue_token, mind.url, kind="client", principal="carol", scopes=["chat"]
    )
    carol = await FaceClient.connect(face.address, token)
    alice = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        listed = json.loads(
            await asyncio.to_thread(admin_cli, mind, "credentials", "list", "--principal", "carol")
        )
        rows = listed if isinstance(listed, list) else listed["credentials"]
        await asyncio.to_thread(admin_cli, mind, "credentials", "revoke", rows[0]["id"])
        status = await carol.wait_closed()
        assert status is not None and status.code() == grpc.StatusCode.UNAUTHENTICATED
        reply = await alice.command(list_conversations=face_pb2.ListConversationsCommand())
        assert reply.HasField("list_conversations") and alice.status is None
        _, refused = await raw_exchange(face.address, [], token)
        assert refused.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        await carol.close()
        await alice.close()
