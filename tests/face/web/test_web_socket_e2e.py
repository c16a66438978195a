"""The web client's WebSocket is one more Face transport, with every guarantee of the gRPC one:
welcome at seq 1, replies, gap-free events, lossless resume, detail modes, revocation, and a
close code for each way a connection ends. A real Mind and a real Face process throughout,
shared by the tests of this module (each uses conversations and principals of its own)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator

import httpx
import pytest
from helpers.face_client import FaceClient, run_ended
from helpers.face_process import FaceProcess, MindDirect, face_env, running_face
from helpers.gateway_script import SCRIPT
from helpers.mind_process import MindProcess, issue_token, running_mind
from helpers.web_client import WebClient, close_of, frame_json, open_socket, parse_frame
from websockets.exceptions import InvalidStatus

from face.web.headers import CONTENT_SECURITY_POLICY
from tobe.v1 import common_pb2, face_pb2

pytestmark = pytest.mark.e2e
SUMMARY = common_pb2.DETAIL_MODE_SUMMARY
HELLO = face_pb2.ConnectRequest(request_id="hello", hello=face_pb2.Hello(client_name="web"))


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    tmp_path = tmp_path_factory.mktemp("web")
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script) as process:
        yield process


@pytest.fixture(scope="module")
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind) as process:
        yield process


async def test_a_web_client_is_welcomed_at_seq_1_and_its_commands_are_answered(
    mind: MindProcess, face: FaceProcess
) -> None:
    client = await WebClient.connect(face.web_address, mind.client_tokens["alice"])
    try:
        assert client.welcome.principal == "alice"
        created = await client.command(
            create_conversation=face_pb2.CreateConversationCommand(key="p_web", title="web")
        )
        assert created.create_conversation.conversation.key == "p_web"
        listed = await client.command(list_conversations=face_pb2.ListConversationsCommand())
        assert "p_web" in [c.key for c in listed.list_conversations.conversations]
        failed = await client.command(snapshot=face_pb2.SnapshotCommand(conversation_key="nope"))
        assert failed.error.code == 5  # NOT_FOUND, and the socket stays open
        assert client.closed is None
    finally:
        await client.close()


async def test_events_stream_gap_free_and_a_resume_after_reconnect_loses_and_repeats_nothing(
    mind: MindProcess, face: FaceProcess
) -> None:
    direct = MindDirect(mind)
    client = await WebClient.connect(face.web_address, mind.client_tokens["alice"])
    try:
        await client.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await client.command(create_conversation=face_pb2.CreateConversationCommand(key="p_a"))
        sent = await client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key="p_a", text="hello", idempotency_key=uuid.uuid4().hex
            )
        )
        await client.wait_frame(
            lambda f: f.HasField("event") and run_ended(sent.send_chat.run_id)(f.event)
        )
        seen = client.durable_ids()
    finally:
        await client.close()
    # Events the client misses while it is away.
    for n in range(5):
        await direct.create(f"p_away{n}")
    resumed = await WebClient.connect(
        face.web_address, mind.client_tokens["alice"], resume_after_id=seen[-1]
    )
    try:
        await resumed.wait_frame(lambda f: f.HasField("replay_done"))
        recovered = resumed.durable_ids()
    finally:
        await resumed.close()
    truth = [event.durable_id for event in await direct.durable_events("alice")]
    await direct.close()
    assert seen + recovered == truth


async def test_a_summary_web_connection_never_receives_raw_tool_content_or_thinking(
    mind: MindProcess, face: FaceProcess
) -> None:
    token = mind.client_tokens["alice"]
    summary = await WebClient.connect(face.web_address, token, mode=SUMMARY)
    # Admitted by a transparent gRPC client: the web client still sees it downgraded.
    grpc_client = await FaceClient.connect(face.address, token)
    try:
        assert summary.welcome.detail_mode == SUMMARY
        await summary.command(subscribe=face_pb2.SubscribeCommand(after_id=0))
        await grpc_client.command(
            create_conversation=face_pb2.CreateConversationCommand(key="p_modes")
        )
        sent = await grpc_client.command(
            send_chat=face_pb2.SendChatCommand(
                conversation_key="p_modes", text="time please", idempotency_key="t-1"
            )
        )
        run_id = sent.send_chat.run_id
        await summary.wait_frame(lambda f: f.HasField("event") and run_ended(run_id)(f.event))
        tools = [e.tool_changed for e in summary.events if e.HasField("tool_changed")]
        assert tools and all(t.arguments_json == "" and t.result_text == "" for t in tools)
        assert all(t.shown_mode == SUMMARY for t in tools)
        assert not any(e.HasField("thinking_delta") for e in summary.events)
        tool_texts = [
            e.message_appended.text
            for e in summary.events
            if e.HasField("message_appended")
            and e.message_appended.role == common_pb2.MESSAGE_ROLE_TOOL
        ]
        assert tool_texts == [""]
    finally:
        await summary.close()
        await grpc_client.close()


async def test_a_socket_without_a_valid_session_cookie_is_closed_4016(
    mind: MindProcess, face: FaceProcess
) -> None:
    for token in (None, "tobe_client_not-a-real-secret"):
        socket = await open_socket(face.web_address, token)
        code, reason = await close_of(socket)
        assert code == 4016, (token, code, reason)
        assert "not signed in" in reason or "credential" in reason


async def test_a_handshake_from_a_foreign_origin_is_refused_403(
    mind: MindProcess, face: FaceProcess
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        await open_socket(
            face.web_address, mind.client_tokens["alice"], origin="https://evil.example"
        )
    assert refused.value.response.status_code == 403
    # The page's own origin is welcome.
    own = await open_socket(
        face.web_address, mind.client_tokens["alice"], origin=f"http://{face.web_address}"
    )
    try:
        await own.send(frame_json(HELLO))
        assert parse_frame(await asyncio.wait_for(own.recv(), 30)).HasField("welcome")
    finally:
        await own.close()


async def test_a_frame_that_is_not_a_connect_request_closes_4003(
    mind: MindProcess, face: FaceProcess
) -> None:
    for bad in ('{"hello": {"detailMode": 1}, "noSuchField": 1}', "not json", '{"hello": 7}'):
        socket = await open_socket(face.web_address, mind.client_tokens["alice"])
        await socket.send(frame_json(HELLO))
        assert parse_frame(await asyncio.wait_for(socket.recv(), 30)).HasField("welcome")
        await socket.send(bad)
        code, reason = await close_of(socket)
        assert (code, reason.split(":")[0]) == (4003, "malformed frame"), bad
    # Before the hello, a frame that is no hello is refused as such.
    socket = await open_socket(face.web_address, mind.client_tokens["alice"])
    await socket.send(frame_json(face_pb2.ConnectRequest(request_id="x", subscribe={})))
    assert await close_of(socket) == (4009, "hello required")


async def test_a_frame_with_an_undefined_enum_value_closes_4003_naming_the_field(
    mind: MindProcess, face: FaceProcess
) -> None:
    socket = await open_socket(face.web_address, mind.client_tokens["alice"])
    await socket.send(frame_json(HELLO))
    assert parse_frame(await asyncio.wait_for(socket.recv(), 30)).HasField("welcome")
    await socket.send('{"requestId": "d", "decideApproval": {"approvalId": "a", "decision": 99}}')
    code, reason = await close_of(socket)
    assert code == 4003
    assert reason.startswith(
        "malformed frame: decide_approval.decision: 99 is not a valid tobe.v1.ApprovalDecision"
    ), reason


async def test_a_frame_over_the_size_limit_closes_1009(mind: MindProcess) -> None:
    with running_face(mind, max_frame_bytes="1024") as face:
        socket = await open_socket(face.web_address, mind.client_tokens["alice"])
        await socket.send(frame_json(HELLO))
        await socket.recv()
        text = "x" * (200 * 1024)
        big = face_pb2.ConnectRequest(
            request_id="big",
            send_chat=face_pb2.SendChatCommand(conversation_key="p", text=text),
        )
        await socket.send(frame_json(big))
        code, _ = await close_of(socket)
        assert code == 1009


async def test_revoking_a_credential_closes_its_open_sockets_4016_at_once(
    mind: MindProcess, face: FaceProcess
) -> None:
    token = await asyncio.to_thread(
        issue_token, mind.url, kind="client", principal="carol", scopes=["chat"]
    )
    carol = await WebClient.connect(face.web_address, token)
    alice = await WebClient.connect(face.web_address, mind.client_tokens["alice"])
    try:
        listed = json.loads(
            await asyncio.to_thread(admin_json, mind, "credentials", "list", "--principal", "carol")
        )
        rows = listed if isinstance(listed, list) else listed["credentials"]
        # Idle, unsubscribed: the revocation alone ends the socket.
        await asyncio.to_thread(admin_json, mind, "credentials", "revoke", rows[0]["id"])
        assert await carol.wait_closed() == (4016, "credential revoked")
        reply = await alice.command(list_conversations=face_pb2.ListConversationsCommand())
        assert reply.HasField("list_conversations") and alice.closed is None
    finally:
        await carol.close()
        await alice.close()


async def test_every_http_response_carries_the_security_headers(
    mind: MindProcess, face: FaceProcess
) -> None:
    async with httpx.AsyncClient(base_url=f"http://{face.web_address}") as http:
        page = await http.get("/")
        session = await http.get("/api/session")
        health = await http.get("/healthz")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert session.status_code == 401 and "error" in session.json()
    assert health.status_code == 200 and health.text == "ok"
    for response in (page, session, health):
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["x-frame-options"] == "DENY"
        assert "permissions-policy" in response.headers
        assert "strict-transport-security" not in response.headers  # plaintext
    assert session.headers["cache-control"] == "no-store"


async def test_a_restarted_face_serves_and_publishes_the_web_client_on_the_same_address(
    mind: MindProcess, face: FaceProcess
) -> None:
    before = face.web_address
    face.restart()
    assert face.web_address == before
    runtime = json.loads((mind.data_dir / "face" / "runtime.json").read_text())
    assert runtime["services"]["web"]["address"] == face.web_address
    client = await WebClient.connect(face.web_address, mind.client_tokens["alice"])
    await client.close()


async def test_sigterm_closes_open_sockets_going_away_and_face_exits_cleanly(
    mind: MindProcess,
) -> None:
    with running_face(mind) as own:
        client = await WebClient.connect(own.web_address, mind.client_tokens["alice"])
        await client.command(subscribe=face_pb2.SubscribeCommand())
        assert await asyncio.to_thread(own.terminate) == 0
        assert await client.wait_closed() == (1012, "")


def test_a_web_address_in_use_is_one_line_naming_the_setting(mind: MindProcess) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = f"127.0.0.1:{holder.getsockname()[1]}"
        result = subprocess.run(
            [sys.executable, "-m", "tobe", "face", "serve", "--listen", "127.0.0.1:0"]
            + ["--web-listen", taken, "--mind", mind.address],
            env=face_env(mind),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode != 0
    assert f"face web cannot listen on {taken}: the address is in use" in result.stderr
    assert "[face.web] listen (TOBE_FACE__WEB__LISTEN)" in result.stderr
    assert "Traceback" not in result.stderr


def admin_json(mind: MindProcess, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "tobe", "admin", *args, "--json"],
        env=mind.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
