"""Credentials kernel: issue, authenticate, revoke, rotate (run on every backend)."""

from __future__ import annotations

import hmac
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import mind.credentials
from mind.credentials import (
    CredentialExpired,
    CredentialNotFound,
    CredentialRevoked,
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
from mind.store.models import Base, Credential

Sessions = async_sessionmaker[AsyncSession]


async def issue_one(sessions: Sessions, **overrides: object) -> tuple[Credential, str]:
    fields: dict[str, object] = {"kind": "client", "principal": "alice", "scopes": ["chat"]}
    fields.update(overrides)
    async with sessions() as session, session.begin():
        return await issue(session, **fields)  # type: ignore[arg-type]


async def who(sessions: Sessions, token: str) -> Identity | None:
    async with sessions() as session:
        return await authenticate(session, token)


def test_public_api_is_pinned() -> None:
    assert sorted(mind.credentials.__all__) == [
        "CredentialError",
        "CredentialExpired",
        "CredentialInactive",
        "CredentialNotFound",
        "CredentialRevoked",
        "Identity",
        "InvalidCredentialRequest",
        "authenticate",
        "issue",
        "parse_token",
        "revoke",
        "rotate",
        "store_authenticator",
    ]


async def test_issued_token_authenticates_as_its_principal(sessions: Sessions) -> None:
    credential, token = await issue_one(sessions, kind="hand", scopes=["hand", "tools:run"])
    parts = parse_token(token)
    assert parts is not None and parts.prefix == credential.prefix
    assert await who(sessions, token) == Identity(
        credential_id=credential.id, kind="hand", principal="alice", scopes=("hand", "tools:run")
    )
    assert await store_authenticator(sessions)(token) == await who(sessions, token)


async def test_wrong_secret_with_a_known_prefix_fails(sessions: Sessions) -> None:
    credential, token = await issue_one(sessions)
    _, other = await issue_one(sessions)
    forged = f"tobe_{credential.prefix}_{parse_token(other).secret}"  # type: ignore[union-attr]
    assert await who(sessions, forged) is None
    assert await who(sessions, token) is not None


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


async def test_malformed_tokens_authenticate_as_nobody(sessions: Sessions) -> None:
    credential, token = await issue_one(sessions)
    for malformed in MALFORMED + [token + "x", token[:-1], token.upper()]:
        assert await who(sessions, malformed) is None, malformed


async def test_unknown_prefix_fails(sessions: Sessions) -> None:
    await issue_one(sessions)
    assert await who(sessions, "tobe_0123456789abcdef_" + "a" * 43) is None


async def test_revoked_token_fails_and_revoking_twice_is_refused(sessions: Sessions) -> None:
    credential, token = await issue_one(sessions)
    async with sessions() as session, session.begin():
        revoked = await revoke(session, credential.id)
    assert revoked.revoked_at is not None
    assert await who(sessions, token) is None
    with pytest.raises(CredentialRevoked):
        async with sessions() as session, session.begin():
            await revoke(session, credential.id)
    with pytest.raises(CredentialNotFound):
        async with sessions() as session, session.begin():
            await revoke(session, "cred_unknown")


async def test_expired_token_fails(sessions: Sessions) -> None:
    credential, token = await issue_one(sessions, expires_at=datetime.now(UTC) + timedelta(hours=1))
    assert await who(sessions, token) is not None
    async with sessions() as session, session.begin():
        await session.execute(
            update(Credential)
            .where(Credential.id == credential.id)
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    assert await who(sessions, token) is None
    with pytest.raises(CredentialExpired):
        async with sessions() as session, session.begin():
            await rotate(session, credential.id)


async def test_rotate_replaces_the_credential_in_one_transaction(sessions: Sessions) -> None:
    old, old_token = await issue_one(sessions, kind="service", scopes=["a", "b"], label="face")
    async with sessions() as session, session.begin():
        new, new_token, old_id = await rotate(session, old.id)
    assert old_id == old.id and new.id != old.id
    assert (new.kind, new.principal, new.scopes, new.label) == (
        "service",
        "alice",
        ["a", "b"],
        "face",
    )
    assert await who(sessions, old_token) is None
    identity = await who(sessions, new_token)
    assert identity is not None and identity.credential_id == new.id
    with pytest.raises(CredentialRevoked):
        async with sessions() as session, session.begin():
            await rotate(session, old.id)
    with pytest.raises(CredentialNotFound):
        async with sessions() as session, session.begin():
            await rotate(session, "cred_unknown")


async def test_failed_rotation_changes_nothing(sessions: Sessions) -> None:
    old, old_token = await issue_one(sessions)
    with pytest.raises(RuntimeError):
        async with sessions() as session, session.begin():
            await rotate(session, old.id)
            raise RuntimeError("the caller's transaction fails after rotating")
    assert await who(sessions, old_token) is not None
    async with sessions() as session:
        assert len((await session.scalars(select(Credential))).all()) == 1


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


async def test_invalid_requests_are_refused_and_store_nothing(sessions: Sessions) -> None:
    for fields, complaint in INVALID_REQUESTS:
        with pytest.raises(InvalidCredentialRequest, match=complaint):
            await issue_one(sessions, **fields)
    async with sessions() as session:
        assert (await session.scalars(select(Credential))).all() == []


async def test_secret_comparison_is_constant_time(
    sessions: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    real_compare = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        calls.append((a, b))
        return real_compare(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", spy)
    credential, token = await issue_one(sessions)
    assert await who(sessions, token) is not None
    assert calls and calls[-1][1] == credential.secret_hash
    calls.clear()
    assert await who(sessions, "tobe_0123456789abcdef_" + "a" * 43) is None
    assert len(calls) == 1  # an unknown prefix costs a comparison too


async def test_no_secret_is_stored_in_any_column(sessions: Sessions) -> None:
    tokens_issued = [(await issue_one(sessions, label=f"n{i}"))[1] for i in range(3)]
    async with sessions() as session, session.begin():
        rotated = await rotate(session, (await session.scalars(select(Credential.id))).first())
    tokens_issued.append(rotated[1])
    secrets = [parse_token(t).secret for t in tokens_issued]  # type: ignore[union-attr]

    async with sessions() as session:
        dump = []
        for table in Base.metadata.sorted_tables:
            rows = (await session.execute(text(f"SELECT * FROM {table.name}"))).all()
            dump.extend(str(value) for row in rows for value in row)
    stored = "\n".join(dump)
    assert stored  # the credentials are there...
    for token, secret in zip(tokens_issued, secrets, strict=True):
        assert secret not in stored and token not in stored  # ...but never their secrets
