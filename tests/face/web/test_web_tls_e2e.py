"""The web client over TLS: HTTPS and WSS with the configured certificate, HSTS, the CA
published beside the `web` address; and one warning when it is served in plaintext beyond
loopback."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path

import httpx
import pytest
from helpers.face_process import FaceProcess, face_env, running_face, wait_for_line
from helpers.mind_process import MindProcess
from helpers.web_client import frame_json, parse_frame
from websockets.asyncio.client import connect

from management.certificates import certificate_file, create_ca, issue, key_file, write_files
from tobe.v1 import face_pb2

pytestmark = pytest.mark.e2e
NOT_LOOPBACK = "served without TLS"


@pytest.fixture
def tls_dir(tmp_path: Path) -> Path:
    ca = create_ca()
    server = issue(ca, "localhost", hosts=["localhost", "127.0.0.1"])
    files = {
        "ca.pem": certificate_file(ca.certificate_pem()),
        "web.pem": certificate_file(server.certificate_pem()),
        "web.key": key_file(server.key_pem()),
    }
    write_files(tmp_path / "tls", files, force=False)
    return tmp_path / "tls"


async def test_the_web_client_is_served_over_https_and_wss_with_hsts(
    mind: MindProcess, tls_dir: Path
) -> None:
    settings = {
        "web__tls__cert_file": str(tls_dir / "web.pem"),
        "web__tls__key_file": str(tls_dir / "web.key"),
    }
    with running_face(mind, **settings) as face:
        trust = ssl.create_default_context(cafile=str(tls_dir / "ca.pem"))
        async with httpx.AsyncClient(base_url=f"https://{face.web_address}", verify=trust) as http:
            health = await http.get("/healthz")
        assert health.text == "ok"
        assert health.headers["strict-transport-security"].startswith("max-age=")
        runtime = json.loads((mind.data_dir / "face" / "runtime.json").read_text())
        assert runtime["services"]["web"]["ca_file"] == str((tls_dir / "ca.pem").resolve())
        cookie = {"Cookie": f"tobe_session={mind.client_tokens['alice']}"}
        async with connect(
            f"wss://{face.web_address}/ws", ssl=trust, additional_headers=cookie
        ) as socket:
            hello = face_pb2.ConnectRequest(request_id="h", hello=face_pb2.Hello())
            await socket.send(frame_json(hello))
            welcome = parse_frame(await asyncio.wait_for(socket.recv(), 30))
        assert welcome.welcome.principal == "alice"
        assert not face.log_lines(NOT_LOOPBACK)


async def test_plaintext_beyond_loopback_is_warned_about_once(mind: MindProcess) -> None:
    face = FaceProcess(face_env(mind), mind.address)
    try:
        face.start(web_listen="0.0.0.0:0")
        await wait_for_line(face, NOT_LOOPBACK)
        assert len(face.log_lines(NOT_LOOPBACK)) == 1
        assert "face.web.tls.cert_file" in face.log_lines(NOT_LOOPBACK)[0]
    finally:
        face.kill()
