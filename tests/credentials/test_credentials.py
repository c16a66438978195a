"""Credentials kernel: issue, authenticate, revoke, rotate (run on every backend)."""

from __future__ import annotations

import hmac
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

import mind.credentials
from mind.credentials import (
    CredentialAlreadyRevoked,
    CredentialExpired,
    CredentialNotFound,
    Identity,
    InvalidCredentialRequest,
    authenticate,
    issue,
    parse_token,
    revoke,
    rotate,
    store_authenticator,
    tokens,
)
from mind.store.database import Database
from mind.store.models import Base, Credential
from mind.store.write_tx import WriteTx


async def issue_one(database: Database, **overrides: object) -> tuple[Credential, str]:
    fields: dict[str, object] = {"kind": "client", "principal": "alice", "scopes": ["chat"]}
    fields.update(overrides)
    return await database.write(lambda tx: issue(tx.session, **fields))  # type: ignore[arg-type]


async def who(database: Database, token: str) -> Identity | None:
    return await database.read(lambda session: authenticate(session, token))


def test_public_api_is_pinned() -> None:
    assert sorted(mind.credentials.__all__) == [
        "CredentialAlreadyRevoked",
        "CredentialExpired",
        "CredentialInactive",
        "CredentialNotFound",
        "Identity",
        "InvalidCredentialRequest",
        "MalformedPairingCode",
        "PairingCodeNotFound",
        "TokenNotAccepted",
        "authenticate",
        "issue",
        "parse_token",
        "revoke",
        "rotate",
        "store_authenticator",
    ]


async def test_issued_token_authenticates_as_its_principal(database: Database) -> None:
    credential, token = await issue_one(database, kind="hand", scopes=["hand", "tools:run"])
    parts = parse_token(token)
    assert parts is not None and parts.prefix == credential.prefix
    assert await who(database, token) == Identity(
        credential_id=credential.id, kind="hand", principal="alice", scopes=("hand", "tools:run")
    )
    assert await store_authenticator(database)(token) == await who(database, token)


async def test_wrong_secret_with_a_known_prefix_fails(database: Database) -> None:
    credential, token = await issue_one(database)
    _, other = await issue_one(database)
    forged = f"tobe_{credential.prefix}_{parse_token(other).secret}"  # type: ignore[union-attr]
    assert await who(database, forged) is None
    assert await who(database, token) is not None


MALFORMED = [
    "",
    "Bearer",
    "tobe_",
    "tobe__",
    "nope_0123456789abcdef_" + "a" * 43,
    "tobe_0123456789abcdef_" + "a" * 42,
    "tobe_0123456789abcdef_" + "a" * 44,
    "tobe_0123456789ABCDEF_" + "a" * 43,
    "tobe_0123456789abcdef_" + "a" * 42 + "!",
    " tobe_0123456789abcdef_" + "a" * 43,
]


@pytest.mark.parametrize("token", MALFORMED)
def test_malformed_tokens_do_not_parse(token: str) -> None:
    assert parse_token(token) is None


async def test_malformed_tokens_authenticate_as_nobody(database: Database) -> None:
    credential, token = await issue_one(database)
    for malformed in MALFORMED + [token + "x", token[:-1], token.upper()]:
        assert await who(database, malformed) is None, malformed


async def test_unknown_prefix_fails(database: Database) -> None:
    await issue_one(database)
    assert await who(database, "tobe_0123456789abcdef_" + "a" * 43) is None


async def test_revoked_token_fails_and_revoking_twice_is_refused(database: Database) -> None:
    credential, token = await issue_one(database)
    revoked = await database.write(lambda tx: revoke(tx.session, credential.id))
    assert revoked.revoked_at is not None
    assert await who(database, token) is None
    with pytest.raises(CredentialAlreadyRevoked):
        await database.write(lambda tx: revoke(tx.session, credential.id))
    with pytest.raises(CredentialNotFound):
        await database.write(lambda tx: revoke(tx.session, "cred_unknown"))


async def test_expired_token_fails(database: Database) -> None:
    credential, token = await issue_one(database, expires_at=datetime.now(UTC) + timedelta(hours=1))
    assert await who(database, token) is not None
    expire = (
        update(Credential)
        .where(Credential.id == credential.id)
        .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
    )
    await database.write(lambda tx: tx.session.execute(expire))
    assert await who(database, token) is None
    with pytest.raises(CredentialExpired):
        await database.write(lambda tx: rotate(tx.session, credential.id))


async def test_rotate_replaces_the_credential_in_one_transaction(database: Database) -> None:
    old, old_token = await issue_one(database, kind="service", scopes=["a", "b"], label="face")
    new, new_token, old_id = await database.write(lambda tx: rotate(tx.session, old.id))
    assert old_id == old.id and new.id != old.id
    assert (new.kind, new.principal, new.scopes, new.label) == (
        "service",
        "alice",
        ["a", "b"],
        "face",
    )
    assert await who(database, old_token) is None
    identity = await who(database, new_token)
    assert identity is not None and identity.credential_id == new.id
    with pytest.raises(CredentialAlreadyRevoked):
        await database.write(lambda tx: rotate(tx.session, old.id))
    with pytest.raises(CredentialNotFound):
        await database.write(lambda tx: rotate(tx.session, "cred_unknown"))


async def test_failed_rotation_changes_nothing(database: Database) -> None:
    old, old_token = await issue_one(database)

    def rotate_then_fail(tx: WriteTx) -> None:
        rotate(tx.session, old.id)
        raise RuntimeError("the caller's transaction fails after rotating")

    with pytest.raises(RuntimeError):
        await database.write(rotate_then_fail)
    assert await who(database, old_token) is not None
    assert len(await database.read(lambda session: session.scalars(select(Credential)).all())) == 1


INVALID_REQUESTS = [
    ({"kind": "admin"}, "kind"),
    ({"principal": ""}, "principal"),
    ({"principal": "al ice"}, "principal"),
    ({"principal": "a" * 129}, "principal"),
    ({"scopes": ["Chat"]}, "scope"),
    ({"scopes": ["1chat"]}, "scope"),
    ({"scopes": ["chat read"]}, "scope"),
    ({"scopes": "chat"}, "list of scope names"),
    ({"expires_at": datetime.now(UTC) - timedelta(seconds=1)}, "past"),
    ({"expires_at": datetime(2999, 1, 1)}, "timezone"),
]


async def test_invalid_requests_are_refused_and_store_nothing(database: Database) -> None:
    for fields, complaint in INVALID_REQUESTS:
        with pytest.raises(InvalidCredentialRequest, match=complaint):
            await issue_one(database, **fields)
    assert await database.read(lambda session: session.scalars(select(Credential)).all()) == []


async def test_secret_comparison_is_constant_time(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    real_compare = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        calls.append((a, b))
        return real_compare(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", spy)
    credential, token = await issue_one(database)
    assert await who(database, token) is not None
    assert calls and calls[-1][1] == credential.secret_hash
    calls.clear()
    assert await who(database, "tobe_0123456789abcdef_" + "a" * 43) is None
    assert len(calls) == 1  # an unknown prefix costs a comparison too


async def test_no_secret_is_stored_in_any_column(database: Database) -> None:
    tokens_issued = [(await issue_one(database, label=f"n{i}"))[1] for i in range(3)]
    rotated = await database.write(
        lambda tx: rotate(tx.session, tx.session.scalars(select(Credential.id)).first())
    )
    tokens_issued.append(rotated[1])
    secrets = [parse_token(t).secret for t in tokens_issued]  # type: ignore[union-attr]

    def dump(session: Session) -> list[str]:
        values = []
        for table in Base.metadata.sorted_tables:
            rows = session.execute(text(f"SELECT * FROM {table.name}")).all()
            values.extend(str(value) for row in rows for value in row)
        return values

    stored = "\n".join(await database.read(dump))
    assert stored  # the credentials are there...
    for token, secret in zip(tokens_issued, secrets, strict=True):
        assert secret not in stored and token not in stored  # ...but never their secrets
