"""Pairing codes: their shape, how typed codes are read, and spending them (on every backend).

The store tests go through `mind.management.pairing.Pairing`, the units the Mind and the
Management service run, with a clock the test moves.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import func, select

from mind.credentials import (
    InvalidCredentialRequest,
    MalformedPairingCode,
    PairingCodeNotFound,
    TokenNotAccepted,
    authenticate,
    issue,
)
from mind.credentials import pairing as codes
from mind.management import audit
from mind.management.pairing import Pairing
from mind.store.database import Database
from mind.store.models import Credential, ManagementAudit, OutboxEvent, PairingCode

CODE = re.compile(r"[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}")
START = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.moment = START

    def now(self) -> datetime:
        return self.moment


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def pairing(database: Database, clock: Clock) -> Pairing:
    return Pairing(database, now=clock.now)


def test_a_new_code_is_two_groups_of_five_crockford_characters() -> None:
    made = {codes.new_code() for _ in range(200)}
    assert all(CODE.fullmatch(code) for code in made)
    assert len(made) == 200


def test_a_code_carries_fifty_random_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codes.secrets, "randbits", lambda bits: (1 << bits) - 1)
    assert codes.new_code() == "ZZZZZ-ZZZZZ"
    monkeypatch.setattr(codes.secrets, "randbits", lambda bits: 0)
    assert codes.new_code() == "00000-00000"


def _retyped(code: str, lower: list[bool], separators: list[str]) -> str:
    """`code` as a person might type it: some letters lower-case, spaces or dashes anywhere."""
    typed = ""
    for index, char in enumerate(code.replace("-", "")):
        typed += separators[index % len(separators)]
        typed += char.lower() if lower[index % len(lower)] else char
    return typed


@given(
    st.lists(st.booleans(), min_size=1, max_size=10),
    st.lists(st.sampled_from(["", " ", "-", "  ", " - "]), min_size=1, max_size=10),
)
def test_case_spaces_and_dashes_do_not_matter(lower: list[bool], separators: list[str]) -> None:
    code = codes.new_code()
    assert codes.normalise(_retyped(code, lower, separators)) == code.replace("-", "")
    assert codes.code_hash(_retyped(code, lower, separators)) == codes.code_hash(code)


def test_letters_mistaken_for_digits_read_as_the_digits() -> None:
    assert codes.normalise("ilo0a-b1lio") == "1100AB1110"


@pytest.mark.parametrize(
    "typed",
    ["", "ABCDE-1234", "ABCDE-123456", "ABCDU-12345", "ABCDE_12345", "ABCDÉ-12345", "A" * 65],
)
def test_what_cannot_be_a_code_is_malformed(typed: str) -> None:
    with pytest.raises(MalformedPairingCode, match="malformed pairing code"):
        codes.normalise(typed)


@given(st.text(max_size=300))
def test_a_device_label_is_printable_trimmed_and_bounded(device: str) -> None:
    label = codes.device_label(device)
    name = label.removeprefix("paired: ")
    assert label.startswith("paired: ") and 0 < len(name) <= 128
    assert name == name.strip()
    assert not any(c in name for c in "\n\r\t\x00\x1b\u2028\u202e")


def test_a_device_label_keeps_the_name_without_control_characters() -> None:
    assert codes.device_label("  web: Chromium\x1b[31m on\nLinux \u202e ") == (
        "paired: web: Chromium[31m onLinux"
    )
    assert codes.device_label(" \t ") == "paired: unnamed device"


def test_a_ttl_is_the_default_for_zero_and_at_most_an_hour() -> None:
    assert codes.ttl(0) == timedelta(seconds=300)
    assert codes.ttl(3600) == timedelta(hours=1)
    for refused in (-1, 3601):
        with pytest.raises(InvalidCredentialRequest, match="1 to 3600 seconds"):
            codes.ttl(refused)


async def _count(database: Database, model: type[PairingCode] | type[Credential]) -> int:
    return await database.read(lambda s: s.scalar(select(func.count()).select_from(model)))


async def test_a_redeemed_code_becomes_a_chat_and_approve_client_credential_of_its_principal(
    database: Database, pairing: Pairing
) -> None:
    issued = await pairing.create("alice", 0, actor="operator")
    assert issued.expires_at == START + timedelta(seconds=300)
    redeemed = await pairing.redeem(issued.code.lower().replace("-", " "), "web: Firefox")
    identity = await database.read(lambda s: authenticate(s, redeemed.token))
    assert identity is not None
    assert (identity.kind, identity.principal, identity.scopes) == (
        "client",
        "alice",
        ("chat", "approve"),
    )
    assert identity.credential_id == redeemed.credential_id
    row = await database.read(lambda s: s.get(Credential, redeemed.credential_id))
    assert row is not None and row.label == "paired: web: Firefox"
    spent = await database.read(lambda s: s.get(PairingCode, issued.id))
    assert spent is not None
    assert (spent.used_at, spent.credential_id) == (START, redeemed.credential_id)


async def test_a_code_works_once(database: Database, pairing: Pairing) -> None:
    issued = await pairing.create("alice", 0, actor="operator")
    await pairing.redeem(issued.code, "first")
    credentials = await _count(database, Credential)
    with pytest.raises(PairingCodeNotFound, match="already used or expired"):
        await pairing.redeem(issued.code, "second")
    assert await _count(database, Credential) == credentials


async def test_a_code_works_until_it_expires_and_not_after(
    database: Database, pairing: Pairing, clock: Clock
) -> None:
    late = await pairing.create("alice", 60, actor="operator")
    in_time = await pairing.create("alice", 60, actor="operator")
    clock.moment = START + timedelta(seconds=59)
    await pairing.redeem(in_time.code, "in time")
    clock.moment = START + timedelta(seconds=60)
    with pytest.raises(PairingCodeNotFound):
        await pairing.redeem(late.code, "too late")
    unused = await database.read(lambda s: s.get(PairingCode, late.id))
    assert unused is not None and unused.used_at is None


async def test_unknown_used_and_expired_codes_are_refused_alike(
    pairing: Pairing, clock: Clock
) -> None:
    used = await pairing.create("alice", 60, actor="operator")
    await pairing.redeem(used.code, "d")
    expired = await pairing.create("alice", 60, actor="operator")
    clock.moment = START + timedelta(minutes=2)
    messages = set()
    for code in (used.code, expired.code, "00000-00000"):
        with pytest.raises(PairingCodeNotFound) as refused:
            await pairing.redeem(code, "d")
        messages.add(str(refused.value))
    assert messages == {
        "pairing code not recognised, already used or expired: make a new one with "
        "`tobe admin pair`"
    }


async def test_of_concurrent_redemptions_of_one_code_exactly_one_wins(
    database: Database, pairing: Pairing
) -> None:
    issued = await pairing.create("alice", 0, actor="operator")
    before = await _count(database, Credential)
    outcomes = await asyncio.gather(
        *(pairing.redeem(issued.code, f"device {n}") for n in range(8)), return_exceptions=True
    )
    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(won) == 1
    assert all(isinstance(o, PairingCodeNotFound) for o in lost)
    assert await _count(database, Credential) == before + 1


async def test_bad_requests_store_nothing(database: Database, pairing: Pairing) -> None:
    for principal, ttl in (("", 0), ("a b", 0), ("x" * 129, 0), ("alice", 3601), ("alice", -5)):
        with pytest.raises(InvalidCredentialRequest):
            await pairing.create(principal, ttl, actor="operator")
    with pytest.raises(MalformedPairingCode):
        await pairing.redeem("not a code", "d")
    assert await _count(database, PairingCode) == 0
    assert await database.read(lambda s: audit.entries(s)) == []


async def test_codes_a_day_past_their_expiry_are_pruned_when_a_code_is_made(
    database: Database, pairing: Pairing, clock: Clock
) -> None:
    old_used = await pairing.create("alice", 60, actor="operator")
    await pairing.redeem(old_used.code, "d")
    old_unused = await pairing.create("alice", 60, actor="operator")
    clock.moment = START + timedelta(days=1)
    recent = await pairing.create("alice", 60, actor="operator")
    clock.moment = START + timedelta(days=1, minutes=2)
    await pairing.create("bob", 60, actor="operator")
    ids = set(await database.read(lambda s: s.scalars(select(PairingCode.id)).all()))
    assert old_used.id not in ids and old_unused.id not in ids
    assert recent.id in ids and len(ids) == 2


async def test_the_store_and_the_audit_trail_never_hold_the_code(
    database: Database, pairing: Pairing
) -> None:
    issued = await pairing.create("alice", 120, actor="operator")
    redeemed = await pairing.redeem(issued.code, "web: Safari")
    rows = await database.read(lambda s: s.scalars(select(PairingCode)).all())
    stored = json.dumps([{c: str(getattr(r, c)) for c in ("id", "code_hash")} for r in rows])
    entries = await database.read(lambda s: audit.entries(s))
    trail = json.dumps([(e.action, e.actor, e.target, e.details) for e in entries])
    for secret in (issued.code, issued.code.replace("-", ""), redeemed.token):
        assert secret not in stored and secret not in trail
    assert [(e.action, e.actor, e.target) for e in entries] == [
        ("pairing.redeem", "alice", redeemed.credential_id),
        ("pairing.create", "operator", "alice"),
    ]
    made, spent = entries[1].details, entries[0].details
    assert made == {
        "pairing_id": issued.id,
        "principal": "alice",
        "expires_at": (START + timedelta(seconds=120)).isoformat(),
    }
    assert spent == {
        "pairing_id": issued.id,
        "principal": "alice",
        "scopes": ["chat", "approve"],
        "label": "paired: web: Safari",
    }


async def test_signing_out_revokes_announces_and_audits_as_the_principal(
    database: Database, pairing: Pairing, database_events: list[OutboxEvent]
) -> None:
    cut: list[str] = []
    signing = Pairing(database, now=Clock().now, disconnect=lambda cid: cut.append(cid) or 0)
    issued = await pairing.create("alice", 0, actor="operator")
    redeemed = await pairing.redeem(issued.code, "web")
    info = await signing.sign_out(redeemed.token)
    assert info.id == redeemed.credential_id and info.revoked_at is not None
    assert cut == [redeemed.credential_id]
    assert await database.read(lambda s: authenticate(s, redeemed.token)) is None
    revoked = [e for e in database_events if e.type == "credential_revoked"]
    assert [e.payload["credential_id"] for e in revoked] == [redeemed.credential_id]
    (entry,) = await database.read(lambda s: audit.entries(s, action="credential.sign_out"))
    assert (entry.actor, entry.target) == ("alice", redeemed.credential_id)
    assert redeemed.token not in json.dumps(entry.details)


async def test_only_a_live_client_credential_can_sign_out(
    database: Database, pairing: Pairing
) -> None:
    _service, service_token = await database.write(
        lambda tx: issue(tx.session, kind="service", principal="face", scopes=["gateway"])
    )
    issued = await pairing.create("alice", 0, actor="operator")
    redeemed = await pairing.redeem(issued.code, "web")
    await pairing.sign_out(redeemed.token)
    for token in ("", "garbage", service_token, redeemed.token):
        with pytest.raises(TokenNotAccepted, match="invalid, revoked or expired client"):
            await pairing.sign_out(token)
    rows = await database.read(lambda s: s.scalars(select(ManagementAudit.action)).all())
    assert rows.count("credential.sign_out") == 1
