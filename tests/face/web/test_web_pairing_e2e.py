"""Signing a browser in and out through a real Face and Mind: a pairing code made from a chat
connection (`pair_device`) carries the web client's link, redeeming it sets the session
cookie, the cookie opens the WebSocket as the code's principal, a code works once, and
signing out revokes the credential, which closes the device's open socket."""

from __future__ import annotations

import httpx
import pytest
from helpers.face_client import FaceClient
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess
from helpers.web_client import WebClient

from tobe.v1 import face_pb2

pytestmark = pytest.mark.e2e


async def test_a_paired_browser_connects_as_its_principal_until_it_signs_out(
    mind: MindProcess, face: FaceProcess
) -> None:
    chat = await FaceClient.connect(face.address, mind.client_tokens["alice"])
    try:
        paired = await chat.command(pair_device=face_pb2.PairDeviceCommand())
    finally:
        await chat.close()
    assert paired.HasField("pair_device"), paired
    code = paired.pair_device.pairing.code
    assert paired.pair_device.pairing.principal == "alice"
    assert paired.pair_device.url == f"http://{face.web_address}/#pair={code}"

    async with httpx.AsyncClient(base_url=f"http://{face.web_address}") as http:
        signed_in = await http.post("/api/pair", json={"code": code, "device": "web: test"})
        assert signed_in.status_code == 204, signed_in.text
        token = http.cookies["tobe_session"]
        assert (await http.get("/api/session")).json()["principal"] == "alice"
        again = await http.post("/api/pair", json={"code": code})
        assert again.status_code == 410

        browser = await WebClient.connect(face.web_address, token)
        try:
            assert browser.welcome.principal == "alice"
            assert set(browser.welcome.scopes) == {"chat", "approve"}
            signed_out = await http.post("/api/logout")
            assert signed_out.status_code == 204
            assert await browser.wait_closed() == (4016, "credential revoked")
        finally:
            await browser.close()
        http.cookies.set("tobe_session", token)
        assert (await http.get("/api/session")).status_code == 401
