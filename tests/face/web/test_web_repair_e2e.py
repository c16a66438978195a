"""Pairing the same browser again through a real Face and Mind: the browser's earlier credential
is revoked (its open socket closes, its cookie is refused), the new one works, and
`tobe admin credentials list` shows the paired device and when it was last seen."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from helpers.admin_cli import Admin
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess
from helpers.web_client import WebClient

pytestmark = pytest.mark.e2e

DEVICE_ID = "3f9c2a7be01d4c55a6e8b1f0d2c4e6a8"


async def _pair(admin: Admin, web_address: str, device_id: str) -> str:
    """A fresh browser session of alice from `device_id`: its session token."""
    made = await asyncio.to_thread(admin.json, "pair", "--principal", "alice")
    async with httpx.AsyncClient(base_url=f"http://{web_address}") as http:
        body = {"code": made["code"], "device": "Firefox on Linux (web)", "device_id": device_id}
        signed_in = await http.post("/api/pair", json=body)
        assert signed_in.status_code == 204, signed_in.text
        return http.cookies["tobe_session"]


async def _session_status(web_address: str, token: str) -> int:
    async with httpx.AsyncClient(base_url=f"http://{web_address}") as http:
        http.cookies.set("tobe_session", token)
        return (await http.get("/api/session")).status_code


async def test_pairing_the_same_browser_again_revokes_its_earlier_credential(
    mind: MindProcess, face: FaceProcess
) -> None:
    admin = Admin(mind.data_dir)
    first = await _pair(admin, face.web_address, DEVICE_ID)
    browser = await WebClient.connect(face.web_address, first)
    try:
        second = await _pair(admin, face.web_address, DEVICE_ID)
        assert await browser.wait_closed() == (4016, "credential revoked")
    finally:
        await browser.close()
    assert await _session_status(face.web_address, first) == 401
    assert await _session_status(face.web_address, second) == 200
    again = await WebClient.connect(face.web_address, second)
    try:
        assert again.welcome.principal == "alice"
    finally:
        await again.close()

    listed = await asyncio.to_thread(
        admin.json, "credentials", "list", "--all", "--principal", "alice"
    )
    paired = [c for c in listed if c["device_id"] == DEVICE_ID]
    assert len(paired) == 2
    revoked, live = sorted(paired, key=lambda c: c["revoked_at"] is None)
    assert revoked["state"] == "revoked" and live["state"] == "active"
    assert live["label"] == "paired: Firefox on Linux (web)"
    # Both authenticated a connection (the first its socket, the second its session check).
    assert revoked["last_seen_at"] is not None and live["last_seen_at"] is not None
    table = (
        await asyncio.to_thread(admin.run, "credentials", "list", "--principal", "alice")
    ).stdout
    assert "LAST SEEN" in table
    row = next(line for line in table.splitlines() if line.startswith(live["id"]))
    assert "paired: Firefox on Linux (web)" in row
    assert live["last_seen_at"][:16].replace("T", " ") in row


async def test_another_browser_of_the_principal_keeps_its_credential(
    mind: MindProcess, face: FaceProcess
) -> None:
    admin = Admin(mind.data_dir)
    laptop = await _pair(admin, face.web_address, DEVICE_ID)
    await _pair(admin, face.web_address, "a-different-browser-id")
    assert await _session_status(face.web_address, laptop) == 200


async def test_a_malformed_device_id_is_refused_and_leaves_the_code_unspent(
    mind: MindProcess, face: FaceProcess
) -> None:
    admin = Admin(mind.data_dir)
    made = await asyncio.to_thread(admin.json, "pair", "--principal", "alice")
    async with httpx.AsyncClient(base_url=f"http://{face.web_address}") as http:
        bad = {"code": made["code"], "device_id": "no spaces allowed here"}
        refused = await http.post("/api/pair", json=bad)
        assert refused.status_code == 400
        assert "device id" in refused.json()["error"]
        fine = await http.post("/api/pair", json={"code": made["code"], "device_id": DEVICE_ID})
        assert fine.status_code == 204, fine.text
