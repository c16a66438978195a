"""`tobe admin channels`: the owner approves a person's pairing code, lists who is paired and
who waits, and forgets a person, with the Mind running (its socket) and stopped (in-process);
the credential made is real and forget revokes it; a refused code changes nothing."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.admin_cli import Admin
from helpers.mind_process import MindProcess, mind_env

from face.channels.state import PAIRING_TTL, ChannelState
from mind.management import local_user

pytestmark = pytest.mark.e2e

ALICE = "@alice:example.org"


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Short, so the Mind's Unix socket path stays well below the 107-byte limit.
    path = Path(tempfile.mkdtemp(prefix="tchn-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def mind_running(data_dir: Path) -> Iterator[MindProcess]:
    mind = MindProcess(data_dir, mind_env(data_dir, None), gateway_token="", client_tokens={})
    try:
        mind.start()
        yield mind
    finally:
        mind.kill()


@pytest.fixture(params=["online", "offline"])
def mode(request: pytest.FixtureRequest, data_dir: Path) -> Iterator[str]:
    """The Mind running on the data directory (answering over its socket), or none."""
    running: AbstractContextManager[Any] = (
        mind_running(data_dir) if request.param == "online" else nullcontext()
    )
    with running:
        yield request.param


def open_code(data_dir: Path, address: str = ALICE, *, ago: timedelta = timedelta()) -> str:
    """A code as the bridge gives it to a person who writes unpaired (`ago`: that long ago)."""
    state = ChannelState.at(data_dir)
    try:
        pairing, _ = state.open_pairing(
            "matrix", address, "!room:example.org", "Alice", datetime.now(UTC) - ago
        )
    finally:
        state.close()
    return pairing.code


def credentials(admin: Admin) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = admin.json("credentials", "list", "--all")
    return [c for c in listed if c["label"].startswith("matrix ")]


def test_approve_list_and_forget(mode: str, data_dir: Path) -> None:
    admin = Admin(data_dir)
    code = open_code(data_dir)
    waiting = admin.json("channels", "list")
    assert waiting["paired"] == []
    assert [(w["code"], w["channel"], w["address"], w["name"]) for w in waiting["waiting"]] == [
        (code, "matrix", ALICE, "Alice")
    ]

    shown = admin.run("channels", "approve", code.lower().replace("-", " "), "--principal", "alice")
    assert f"Paired {ALICE} on matrix as alice (credential " in shown.stdout
    [made] = credentials(admin)
    assert (made["kind"], made["principal"], made["scopes"], made["state"]) == (
        "client",
        "alice",
        ["chat", "approve"],
        "active",
    )
    assert made["label"] == f"matrix {ALICE}"
    state = ChannelState.at(data_dir)
    try:
        sender = state.sender("matrix", ALICE)
        assert sender is not None
        assert (sender.principal, sender.credential_id) == ("alice", made["id"])
        assert sender.token.startswith("tobe_")
        # The bridge learns of the approval to tell the person.
        assert [p.code for p in state.unannounced("matrix")] == [code]
    finally:
        state.close()

    listed = admin.json("channels", "list")
    assert listed["waiting"] == []
    [paired] = listed["paired"]
    assert (paired["address"], paired["principal"], paired["credential_id"]) == (
        ALICE,
        "alice",
        made["id"],
    )
    table = admin.run("channels", "list").stdout
    assert ALICE in table and made["id"] in table and "No pairing code is waiting." in table

    forgotten = admin.json("channels", "forget", "matrix", ALICE)
    assert forgotten["revoked"] is True
    [revoked] = credentials(admin)
    assert (revoked["id"], revoked["state"]) == (made["id"], "revoked")
    assert admin.json("channels", "list") == {"paired": [], "waiting": []}


def test_approve_defaults_to_the_local_user(mode: str, data_dir: Path) -> None:
    admin = Admin(data_dir)
    approved = admin.json("channels", "approve", open_code(data_dir))
    assert approved["principal"] == local_user()
    assert [c["principal"] for c in credentials(admin)] == [local_user()]


def refusal(admin: Admin, *args: str) -> str:
    result = admin.run("channels", *args, ok=False)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def test_unknown_expired_and_spent_codes_are_refused_and_change_nothing(
    mode: str, data_dir: Path
) -> None:
    admin = Admin(data_dir)
    assert refusal(admin, "approve", "ABCD-EFGH") == (
        "Error: no pairing code 'ABCD-EFGH' is waiting: no channel has been used yet"
    )
    assert not (data_dir / "channels").exists()

    expired = open_code(data_dir, "@old:example.org", ago=PAIRING_TTL + timedelta(minutes=1))
    assert "expired at" in refusal(admin, "approve", expired)
    assert refusal(admin, "approve", "wxyz2345").startswith(
        "Error: no pairing code 'wxyz2345' is waiting: check the code the person was sent"
    )
    code = open_code(data_dir)
    admin.run("channels", "approve", code)
    assert refusal(admin, "approve", code) == f"Error: pairing code {code} was approved already"
    assert len(credentials(admin)) == 1
    listed = admin.json("channels", "list")
    assert [p["address"] for p in listed["paired"]] == [ALICE]

    assert refusal(admin, "forget", "matrix", "@nobody:example.org") == (
        "Error: @nobody:example.org is not paired on matrix (`tobe admin channels list` shows "
        "who is)"
    )
    assert [c["state"] for c in credentials(admin)] == ["active"]


def test_forget_before_any_channel_ran_says_so(data_dir: Path) -> None:
    assert refusal(Admin(data_dir), "forget", "email", "bob@example.org") == (
        "Error: bob@example.org is not paired on email: no channel has been used yet"
    )
    assert "no channel has been used yet" in Admin(data_dir).run("channels", "list").stdout


def test_a_pairing_that_cannot_be_recorded_revokes_the_credential_made_for_it(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = Admin(data_dir)
    code = open_code(data_dir)

    def disk_full(*args: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(ChannelState, "approve_pairing", disk_full)
    line = refusal(admin, "approve", code)
    [made] = credentials(admin)
    assert line == (
        "Error: pairing failed: database or disk is full; the credential made for them "
        f"({made['id']}) was revoked"
    )
    assert made["state"] == "revoked"
    monkeypatch.undo()
    assert [w["code"] for w in admin.json("channels", "list")["waiting"]] == [code]
