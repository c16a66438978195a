"""`tobe admin pair`: a code a device can redeem, its expiry and the link to open, offline and
online; bad input is refused in one line and stores nothing."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from helpers.admin_cli import Admin
from helpers.face_process import FaceProcess
from helpers.mind_process import MindProcess

from mind.credentials import authenticate
from mind.management import local_user
from mind.management.pairing import Pairing
from mind.store.database import Database
from tobe.runtime.addresses import publish, withdraw
from tobe.v1 import mind_pb2, mind_pb2_grpc

CODE_LENGTH = len("ABCDE-12345")


def redeem_in_store(url: str, code: str) -> tuple[str, tuple[str, ...]]:
    """Spend `code` on the store as the Mind would; the principal and scopes it signs in as."""

    async def spend() -> tuple[str, tuple[str, ...]]:
        database = Database.open(url)
        try:
            redeemed = await Pairing(database, now=lambda: datetime.now(UTC)).redeem(code, "test")
            identity = await database.read(lambda s: authenticate(s, redeemed.token))
        finally:
            await database.close()
        assert identity is not None
        return identity.principal, identity.scopes

    return asyncio.run(spend())


def test_offline_pair_makes_a_code_of_the_local_user_that_a_device_can_redeem(
    admin: Admin,
) -> None:
    made = admin.json("pair")
    assert set(made) == {"code", "principal", "expires_at", "url"}
    assert made["principal"] == local_user()
    assert len(made["code"]) == CODE_LENGTH
    assert made["url"] == f"http://127.0.0.1:7421/#pair={made['code']}"
    assert redeem_in_store(admin.store_url, made["code"]) == (local_user(), ("chat", "approve"))


def test_pair_says_when_the_code_expires_and_where_to_open_it(admin: Admin) -> None:
    made = admin.json("pair", "--principal", "dora", "--ttl", "10m")
    expires = datetime.fromisoformat(made["expires_at"].replace("Z", "+00:00"))
    left = expires - datetime.now(UTC)
    assert timedelta(minutes=9) < left <= timedelta(minutes=10)
    shown = admin.run("pair", "--principal", "dora", "--ttl", "90").stdout
    lines = shown.splitlines()
    code = lines[1]
    assert lines[0] == "Pairing code for dora (works once):"
    assert len(code) == CODE_LENGTH and code != made["code"]
    assert lines[2].startswith("Expires ") and lines[2].endswith("(in 2 min).")
    assert lines[3:5] == ["Open on the device:", f"http://127.0.0.1:7421/#pair={code}"]
    assert "web client is not running" in shown


def test_the_link_points_at_the_web_client_face_published(admin: Admin) -> None:
    publish(admin.data_dir, "web", "0.0.0.0:18123")
    try:
        made = admin.json("pair")
        assert made["url"] == f"http://127.0.0.1:18123/#pair={made['code']}"
        assert "not running" not in admin.run("pair").stdout
        publish(admin.data_dir, "web", "127.0.0.1:18124", ca_file="/etc/ca.pem")
        made = admin.json("pair")
        assert made["url"] == f"https://127.0.0.1:18124/#pair={made['code']}"
    finally:
        withdraw(admin.data_dir, "web")


@pytest.mark.parametrize(
    ("config", "url", "note"),
    [
        (
            '[face.web]\npublic_url = "https://agent.example/chat"\n',
            "https://agent.example/chat/",
            "",
        ),
        ('[face.web]\nlisten = "127.0.0.1:9000"\n', "http://127.0.0.1:9000/", "not running"),
        ("[face.web]\nenabled = false\n", "http://127.0.0.1:7421/", "turned off"),
    ],
)
def test_without_a_running_web_client_the_link_comes_from_the_configuration(
    data_dir: Path, config: str, url: str, note: str
) -> None:
    path = data_dir / "config.toml"
    path.write_text(config)
    admin = Admin(data_dir, config=path)
    made = admin.json("pair")
    assert made["url"] == f"{url}#pair={made['code']}"
    printed = admin.run("pair").stdout
    if note:
        assert note in printed
    else:  # a public address stands on its own: the web client may run elsewhere
        assert "not running" not in printed and "turned off" not in printed


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--ttl", "soon"), "--ttl 'soon' is not a time a code can live"),
        (("--ttl", "0"), "is not a time a code can live"),
        (("--ttl", "99999999999"), "is not a time a code can live"),
        (("--ttl", "2h"), "a pairing code lives 1 to 3600 seconds"),
        (("--principal", "a b"), "invalid principal 'a b'"),
    ],
)
def test_bad_input_is_refused_in_one_line_and_stores_nothing(
    admin: Admin, args: tuple[str, ...], words: str
) -> None:
    result = admin.run("pair", *args, ok=False)
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: ") and words in line, line
    assert admin.json("audit") == []


def test_the_audit_trail_records_the_code_without_it(admin: Admin) -> None:
    made = admin.json("pair", "--principal", "erin", "--ttl", "5m")
    (entry,) = admin.json("audit", "--action", "pairing.")
    assert (entry["action"], entry["target"]) == ("pairing.create", "erin")
    assert entry["details"]["expires_at"].startswith(made["expires_at"][:16])
    everything = json.dumps(admin.json("audit"))
    assert made["code"] not in everything
    assert made["code"].replace("-", "") not in everything


@pytest.mark.e2e
def test_online_pair_is_answered_by_the_running_mind_and_redeemed_through_it(
    stack: tuple[MindProcess, FaceProcess],
) -> None:
    mind, _face = stack
    admin = Admin(mind.data_dir)
    result = admin.run("pair", "--principal", "frank", "--json", "--verbose")
    assert "mode: online" in result.stderr
    made = json.loads(result.stdout)
    with grpc.insecure_channel(mind.address) as channel:
        stub = mind_pb2_grpc.MindStub(channel)
        redeemed = stub.RedeemPairingCode(
            mind_pb2.RedeemPairingCodeRequest(code=made["code"], device="web: test"),
            metadata=mind.gateway_metadata,
            timeout=15,
        )
        identity = stub.Authenticate(
            mind_pb2.AuthenticateRequest(token=redeemed.token),
            metadata=mind.gateway_metadata,
            timeout=15,
        ).identity
    assert (identity.principal, list(identity.scopes)) == ("frank", ["chat", "approve"])
    log = "\n".join(mind.output)
    assert made["code"] not in log and made["code"].replace("-", "") not in log
    assert redeemed.token not in log
