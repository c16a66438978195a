"""Issue, authenticate, revoke and rotate credentials stored in the `credentials` table.

Every function works inside the caller's session and transaction; the caller commits. The
token is returned once by `issue`/`rotate` and never stored: only its secret's SHA-256 is.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from mind.credentials.errors import (
    CredentialAlreadyRevoked,
    CredentialExpired,
    CredentialNotFound,
    InvalidCredentialRequest,
)
from mind.credentials.identity import Identity
from mind.credentials.tokens import hash_secret, new_token, parse_token, secret_matches
from mind.store.database import Database
from mind.store.models import Credential
from mind.store.models.credentials import CREDENTIAL_KINDS

MAX_PRINCIPAL_LENGTH = 128
MAX_LABEL_LENGTH = 256
# `serve:<principal>` (which conversations a Hand serves) carries a principal name verbatim.
_SCOPE = re.compile(r"[a-z][a-z0-9_.:-]*|serve:\S{1,58}")
# Compared against when the prefix is unknown, so a miss costs the same work as a wrong secret.
_ABSENT_HASH = hash_secret(secrets.token_urlsafe(32))


def _now() -> datetime:
    return datetime.now(UTC)


def _validated_scopes(scopes: Iterable[str]) -> list[str]:
    if isinstance(scopes, str):
        raise InvalidCredentialRequest("scopes must be a list of scope names, not one string")
    result: list[str] = []
    for scope in scopes:
        if not isinstance(scope, str) or not _SCOPE.fullmatch(scope) or len(scope) > 64:
            raise InvalidCredentialRequest(
                f"invalid scope {scope!r}: use lowercase letters, digits and _ . : - "
                "(starting with a letter, at most 64 characters)"
            )
        if scope not in result:
            result.append(scope)
    return result


def validate_principal(principal: str) -> None:
    """InvalidCredentialRequest unless `principal` can name a credential's owner."""
    if (
        not principal
        or len(principal) > MAX_PRINCIPAL_LENGTH
        or any(c.isspace() for c in principal)
    ):
        raise InvalidCredentialRequest(
            f"invalid principal {principal!r}: non-empty, no whitespace, "
            f"at most {MAX_PRINCIPAL_LENGTH} characters"
        )


def _validate(kind: str, principal: str, expires_at: datetime | None, label: str) -> None:
    if kind not in CREDENTIAL_KINDS:
        raise InvalidCredentialRequest(
            f"invalid credential kind {kind!r}: expected one of {', '.join(CREDENTIAL_KINDS)}"
        )
    validate_principal(principal)
    if len(label) > MAX_LABEL_LENGTH:
        raise InvalidCredentialRequest(f"label longer than {MAX_LABEL_LENGTH} characters")
    if expires_at is not None:
        if expires_at.tzinfo is None:
            raise InvalidCredentialRequest("expires_at must be timezone-aware (e.g. UTC)")
        if expires_at <= _now():
            raise InvalidCredentialRequest("expires_at is in the past")


def _new_credential_id() -> str:
    return f"cred_{secrets.token_hex(12)}"


def issue(
    session: Session,
    *,
    kind: str,
    principal: str,
    scopes: Iterable[str] = (),
    expires_at: datetime | None = None,
    label: str = "",
) -> tuple[Credential, str]:
    """Store a new credential; returns it and its token, which is never retrievable again."""
    _validate(kind, principal, expires_at, label)
    scope_list = _validated_scopes(scopes)
    parts, token = new_token()
    credential = Credential(
        id=_new_credential_id(),
        kind=kind,
        principal=principal,
        scopes=scope_list,
        prefix=parts.prefix,
        secret_hash=hash_secret(parts.secret),
        label=label,
        created_at=_now(),
        expires_at=expires_at,
    )
    session.add(credential)
    session.flush()
    return credential, token


def _is_expired(credential: Credential, now: datetime) -> bool:
    return credential.expires_at is not None and credential.expires_at <= now


def authenticate(session: Session, token: str) -> Identity | None:
    """The identity a token stands for; None when malformed, unknown, revoked or expired."""
    parts = parse_token(token)
    if parts is None:
        return None
    credential = session.scalar(select(Credential).where(Credential.prefix == parts.prefix))
    stored_hash = credential.secret_hash if credential is not None else _ABSENT_HASH
    if not secret_matches(parts.secret, stored_hash) or credential is None:
        return None
    if credential.revoked_at is not None or _is_expired(credential, _now()):
        return None
    return Identity(
        credential_id=credential.id,
        kind=credential.kind,
        principal=credential.principal,
        scopes=tuple(credential.scopes),
        expires_at=credential.expires_at,
    )


def _get(session: Session, credential_id: str) -> Credential:
    credential = session.get(Credential, credential_id, populate_existing=True)
    if credential is None:
        raise CredentialNotFound(credential_id)
    return credential


def revoke(session: Session, credential_id: str) -> Credential:
    """Revoke a credential (compare-and-set: of two concurrent revocations, one fails)."""
    result = session.execute(
        update(Credential)
        .where(Credential.id == credential_id, Credential.revoked_at.is_(None))
        .values(revoked_at=_now())
        .execution_options(synchronize_session=False)
    )
    credential = _get(session, credential_id)
    if cast(CursorResult[Any], result).rowcount != 1:  # an UPDATE's result is a cursor's
        raise CredentialAlreadyRevoked(credential_id)
    return credential


def rotate(session: Session, credential_id: str) -> tuple[Credential, str, str]:
    """Replace a credential with a new one of the same kind, principal, scopes and expiry.

    Returns `(new credential, new token, id of the revoked old credential)`; both changes
    happen in the caller's transaction. An expired credential cannot be rotated.
    """
    old = _get(session, credential_id)
    if old.revoked_at is not None:
        raise CredentialAlreadyRevoked(credential_id)
    if _is_expired(old, _now()):
        raise CredentialExpired(credential_id)
    revoke(session, credential_id)
    new, token = issue(
        session,
        kind=old.kind,
        principal=old.principal,
        scopes=old.scopes,
        expires_at=old.expires_at,
        label=old.label,
    )
    return new, token, old.id


def store_authenticator(database: Database) -> Callable[[str], Awaitable[Identity | None]]:
    """An `authenticate(token)` callable for `mind.credentials.interceptor.AuthInterceptor`,
    one read a call."""

    async def authenticate_token(token: str) -> Identity | None:
        return await database.read(lambda session: authenticate(session, token))

    return authenticate_token
