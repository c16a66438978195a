"""Face's health says whether it can serve anyone, and why not; a client connecting meanwhile is
told the real cause, never that its own valid credential is bad.

With its Mind killed the Face is NOT_SERVING ("the Face cannot reach the Mind at …") on gRPC
health, `GET /healthz` and `tobe health --target`, and SERVING again once the Mind is back; with
its own credential revoked it is NOT_SERVING ("the Face's own credential was refused"), which
`tobe admin status` shows too. A chat client (gRPC, `tobe chat`, the web socket) connecting in
either state gets UNAVAILABLE naming that cause; a bad client credential is still refused
UNAUTHENTICATED.
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pexpect
import pytest
from click.testing import CliRunner
from helpers.admin_cli import Admin
from helpers.eventually import eventually
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, running_mind
from helpers.screen import screen_lines
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tobe.cli import main
from tobe.runtime.addresses import publish, withdraw
from tobe.v1 import face_pb2, face_pb2_grpc, mind_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]
OWN_CREDENTIAL_REFUSED = "the Face's own credential was refused ("
REPLACE_IT = "): an operator must replace it"
# WebSocket close code of a connection ended UNAVAILABLE (4000 + the gRPC status number).
CLOSED_UNAVAILABLE = 4014


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    with running_mind(tmp_path, script=None) as process:
        yield process


@pytest.fixture
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind) as process:
        yield process


def connect_refusal(face: FaceProcess, token: str) -> tuple[grpc.StatusCode, str]:
    """How Face ends a client's Connect (status and text); fails if it welcomes the client."""
    hello = face_pb2.ConnectRequest(request_id="hello", hello=face_pb2.Hello())
    with grpc.insecure_channel(face.address) as channel:
        replies = face_pb2_grpc.FaceGatewayStub(channel).Connect(
            iter([hello]), metadata=(("authorization", f"Bearer {token}"),), timeout=30
        )
        try:
            first = next(replies)
        except grpc.RpcError as ended:
            return ended.code(), ended.details() or ""  # type: ignore[attr-defined]
    raise AssertionError(f"Face welcomed the client: {first}")


def web_refusal(face: FaceProcess, token: str) -> tuple[int, str]:
    """The close code and reason of a web client's socket opened with `token` as its session."""
    with connect(
        f"ws://{face.web_address}/ws",
        additional_headers={"Cookie": f"tobe_session={token}"},
        open_timeout=30,
    ) as socket:
        try:
            socket.recv(timeout=30)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None
            return closed.rcvd.code, closed.rcvd.reason
    raise AssertionError("the socket was not closed")


def healthz(face: FaceProcess) -> tuple[int, str]:
    response = httpx.get(f"http://{face.web_address}/healthz", timeout=10)
    return response.status_code, response.text


def health_cli(face: FaceProcess) -> tuple[int, str]:
    """`tobe health --target` on Face: its exit status and what it printed."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        result = CliRunner().invoke(main, ["health", "--target", face.address])
    finally:
        # The command configures process logging; give the test runner its own back.
        root.handlers[:], root.level = handlers, level
    return result.exit_code, result.output


def wait_health(face: FaceProcess, status: str, reason: str = "") -> tuple[str, str]:
    return eventually(
        face.health,
        until=lambda seen: seen[0] == status and reason in seen[1],
        what=f"Face's health to say {status} ({reason})",
        context=lambda: "\n".join(face.output[-30:]),
    )


def gateway_credential(mind: MindProcess) -> str:
    """The id of the Face's own credential (`running_mind` issues it to principal `face`)."""
    listed = Admin(mind.data_dir).json("credentials", "list", "--principal", "face")
    rows = listed if isinstance(listed, list) else listed["credentials"]
    (row,) = rows
    return str(row["id"])


def test_face_is_not_serving_while_its_mind_is_down_and_serving_once_it_is_back(
    mind: MindProcess, face: FaceProcess
) -> None:
    assert face.health() == ("SERVING", "")
    assert healthz(face) == (200, "ok")

    mind.kill()
    cause = f"the Face cannot reach the Mind at {mind.address} ("
    _, reason = wait_health(face, "NOT_SERVING", cause)
    status, text = healthz(face)
    assert status == 503 and text.startswith(f"not serving: {cause}"), text
    exit_code, output = health_cli(face)
    assert exit_code == 1
    assert output.strip() == f"{face.address} (server): NOT_SERVING ({reason})"

    mind.start(mind.address)
    wait_health(face, "SERVING")
    assert healthz(face) == (200, "ok")
    assert health_cli(face) == (0, f"{face.address} (server): SERVING\n")


def test_a_client_connecting_while_the_mind_is_down_is_told_the_face_cannot_reach_it(
    mind: MindProcess, face: FaceProcess
) -> None:
    mind.kill()
    wait_health(face, "NOT_SERVING")
    cause = f"the Face cannot reach the Mind at {mind.address} ("

    code, details = connect_refusal(face, mind.client_tokens["alice"])
    assert code == grpc.StatusCode.UNAVAILABLE and details.startswith(cause), details
    closed, reason = web_refusal(face, mind.client_tokens["alice"])
    assert closed == CLOSED_UNAVAILABLE and reason.startswith(cause), reason

    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", face.address],
        env={**face.env, "TOBE_CHAT_TOKEN": mind.client_tokens["alice"], "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    chat.logfile_read = io.StringIO()
    try:
        chat.expect(r"reconnecting… \(the Face cannot reach the Mind at ")
    finally:
        chat.close(force=True)
    lines = screen_lines(chat.logfile_read.getvalue(), 200, 50)
    assert not any("credential" in line for line in lines), lines


def test_face_is_not_serving_once_its_own_credential_is_revoked_and_says_so_to_clients(
    mind: MindProcess, face: FaceProcess
) -> None:
    admin = Admin(mind.data_dir)
    admin.run("credentials", "revoke", gateway_credential(mind))
    _, reason = wait_health(face, "NOT_SERVING", OWN_CREDENTIAL_REFUSED)
    assert reason.endswith(REPLACE_IT), reason
    exit_code, output = health_cli(face)
    assert exit_code == 1 and f"NOT_SERVING ({OWN_CREDENTIAL_REFUSED}" in output, output
    status, text = healthz(face)
    assert status == 503 and OWN_CREDENTIAL_REFUSED in text, text

    publish(mind.data_dir, "face", face.address)
    try:
        shown = admin.json("status")["face"]
        line = admin.run("status").stdout
    finally:
        withdraw(mind.data_dir, "face")
    assert shown["status"] == "NOT_SERVING"
    assert shown["detail"].startswith(OWN_CREDENTIAL_REFUSED), shown
    assert f"not serving at {face.address} ({OWN_CREDENTIAL_REFUSED}" in line, line

    # alice's own credential is valid: she is told it is the Face's that was refused.
    code, details = connect_refusal(face, mind.client_tokens["alice"])
    assert code == grpc.StatusCode.UNAVAILABLE, (code, details)
    assert details.startswith(OWN_CREDENTIAL_REFUSED) and details.endswith(REPLACE_IT), details
    closed, why = web_refusal(face, mind.client_tokens["alice"])
    assert closed == CLOSED_UNAVAILABLE and why.startswith(OWN_CREDENTIAL_REFUSED), why


def test_a_bad_client_credential_is_still_refused_as_the_clients_own(
    mind: MindProcess, face: FaceProcess
) -> None:
    code, details = connect_refusal(face, "tobe_nothing_known")
    assert code == grpc.StatusCode.UNAUTHENTICATED, (code, details)
    assert details == "invalid, revoked or expired client credential"
    assert face.health() == ("SERVING", "")


def test_a_face_started_before_its_mind_is_not_serving_until_the_mind_is_up(
    mind: MindProcess,
) -> None:
    mind.kill()
    with running_face(mind, web=False, serving=False) as face:
        status, reason = face.health()
        assert status == "NOT_SERVING"
        assert reason.startswith("the Face ") and mind.address in reason, reason
        mind.start(mind.address)
        wait_health(face, "SERVING")


async def test_a_call_forwarded_while_the_mind_is_down_says_the_face_cannot_reach_it(
    mind: MindProcess, face: FaceProcess
) -> None:
    client = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        mind.kill()
        wait_health(face, "NOT_SERVING")
        call = face_pb2.MindCall(list_conversations=mind_pb2.ListConversationsRequest())
        reply = await client.command(mind=call)
    finally:
        await client.close()
        mind.start(mind.address)
        wait_health(face, "SERVING")
    assert reply.WhichOneof("result") == "error"
    assert reply.error.code == grpc.StatusCode.UNAVAILABLE.value[0]
    assert reply.error.message.startswith(f"the Face cannot reach the Mind at {mind.address} (")
