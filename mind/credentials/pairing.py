"""One-time pairing codes: a device (the web client) signs in without anyone copying a token.

A person asks for a code (`tobe admin pair`, `/pair` in a client) and types or opens it on the
device, whose gateway redeems it for a new client credential of the code's principal with
scopes `chat` and `approve`. A code is 50 random bits in Crockford base32, printed as two
groups of five (`ABCDE-12345`): short enough to type, too many to guess within its life
(at most an hour) at the rate a gateway lets anyone try. Crockford's alphabet has no I, L, O
or U; what a person types is forgiven the way Crockford says (case, spaces and dashes do not
matter; I and L read as 1, O as 0).

The store keeps the SHA-256 of the normalised code, never the code. Redemption marks the code
used with one conditional UPDATE (unused and unexpired) and issues the credential in the same
transaction, so of two redemptions racing for one code exactly one wins, and a code that
became a credential cannot be spent again. Unknown, used and expired codes are refused alike.

Every function works inside the caller's session and transaction, like `store`; the caller
commits and writes the audit rows.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select, update
from sqlalchemy.orm import Session

from mind.credentials.errors import (
    InvalidCredentialRequest,
    MalformedPairingCode,
    PairingCodeNotFound,
)
from mind.credentials.store import issue, validate_principal
from mind.store.models import Credential, PairingCode

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_BITS = 50
GROUP = 5
CODE_LENGTH = CODE_BITS // GROUP  # one character carries five bits
DEFAULT_TTL_SECONDS = 300
MAX_TTL_SECONDS = 3600
SCOPES = ("chat", "approve")
MAX_DEVICE_LENGTH = 128
LABEL_PREFIX = "paired: "
UNNAMED_DEVICE = "unnamed device"
# Used and expired codes stay this long after their expiry, then the next new code prunes them.
KEEP_AFTER_EXPIRY = timedelta(days=1)
# Longer input is refused before it is looked at: the code and some spaces fit well within.
_MAX_INPUT = 64
# What a browser may name itself with: its own random id, kept in its storage.
_DEVICE_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
_READ_AS = str.maketrans({"I": "1", "L": "1", "O": "0", " ": None, "-": None, "\t": None})


@dataclass(frozen=True)
class IssuedCode:
    """A new code: `code` is shown to the person who asked, once, and stored only hashed."""

    id: str
    principal: str
    expires_at: datetime
    code: str = field(repr=False)


@dataclass(frozen=True)
class Redeemed:
    """A spent code and the client credential it became (`token` is shown once)."""

    pairing_id: str
    credential_id: str
    principal: str
    label: str
    token: str = field(repr=False)
    # Live credentials the same device had for the principal, to be revoked with this one.
    replaces: tuple[str, ...] = ()


def ttl(seconds: int) -> timedelta:
    """How long a code lives: `seconds`, or the default for 0; at most an hour."""
    if seconds == 0:
        return timedelta(seconds=DEFAULT_TTL_SECONDS)
    if seconds < 0 or seconds > MAX_TTL_SECONDS:
        raise InvalidCredentialRequest(
            f"a pairing code lives 1 to {MAX_TTL_SECONDS} seconds "
            f"(0: {DEFAULT_TTL_SECONDS}), not {seconds}"
        )
    return timedelta(seconds=seconds)


def new_code() -> str:
    """50 random bits as `ABCDE-12345`."""
    bits = secrets.randbits(CODE_BITS)
    digits = "".join(
        ALPHABET[(bits >> (GROUP * place)) & 0b11111] for place in reversed(range(CODE_LENGTH))
    )
    return f"{digits[:GROUP]}-{digits[GROUP:]}"


def normalise(code: str) -> str:
    """The ten characters a typed code stands for; MalformedPairingCode if it is none."""
    if len(code) > _MAX_INPUT:
        raise MalformedPairingCode()
    digits = code.upper().translate(_READ_AS)
    if len(digits) != CODE_LENGTH or any(c not in ALPHABET for c in digits):
        raise MalformedPairingCode()
    return digits


def code_hash(code: str) -> str:
    """What the store keeps of a code: the SHA-256 hex of its normalised form."""
    return hashlib.sha256(normalise(code).encode()).hexdigest()


def device_label(device: str) -> str:
    """The label of a paired credential: `paired: <device>`, the device name without control
    or format characters and line breaks, trimmed, at most 128 characters."""
    printable = "".join(
        c for c in device if unicodedata.category(c)[0] != "C" and c not in "\u2028\u2029"
    )
    name = printable.strip()[:MAX_DEVICE_LENGTH].strip()
    return LABEL_PREFIX + (name or UNNAMED_DEVICE)


def validate_device_id(device_id: str) -> None:
    """InvalidCredentialRequest unless `device_id` is empty or 8 to 64 of A-Z a-z 0-9 _ -."""
    if device_id and not _DEVICE_ID.fullmatch(device_id):
        raise InvalidCredentialRequest(
            "a device id is 8 to 64 letters, digits, '_' or '-' (or empty for none)"
        )


def device_credentials(session: Session, principal: str, device_id: str) -> list[str]:
    """Ids of `principal`'s unrevoked client credentials paired from `device_id`."""
    return list(
        session.scalars(
            select(Credential.id).where(
                Credential.principal == principal,
                Credential.device_id == device_id,
                Credential.kind == "client",
                Credential.revoked_at.is_(None),
            )
        )
    )


def prune(session: Session, now: datetime) -> int:
    """Remove codes that expired more than a day ago (used or not); returns how many."""
    result = session.execute(
        delete(PairingCode)
        .where(PairingCode.expires_at < now - KEEP_AFTER_EXPIRY)
        .execution_options(synchronize_session=False)
    )
    return cast(CursorResult[Any], result).rowcount


def create(
    session: Session, *, principal: str, ttl_seconds: int, created_by: str, now: datetime
) -> IssuedCode:
    """Store a new code for `principal` (its hash); prunes long-dead codes on the way."""
    validate_principal(principal)
    expires_at = now + ttl(ttl_seconds)
    prune(session, now)
    code = new_code()
    row = PairingCode(
        id=f"pair_{secrets.token_hex(12)}",
        code_hash=code_hash(code),
        principal=principal,
        created_at=now,
        expires_at=expires_at,
        created_by=created_by,
    )
    session.add(row)
    session.flush()
    return IssuedCode(id=row.id, code=code, principal=principal, expires_at=expires_at)


def redeem(
    session: Session, code: str, device: str, *, now: datetime, device_id: str = ""
) -> Redeemed:
    """Spend `code` and issue its client credential, in the caller's transaction.

    MalformedPairingCode for input that cannot be a code; PairingCodeNotFound when no unused,
    unexpired code matches (the conditional UPDATE lost, or there was nothing to win).
    With `device_id`, `replaces` names the live credentials that device already had for the
    code's principal (for the caller to revoke in the same transaction).
    """
    validate_device_id(device_id)
    digest = code_hash(code)
    spent = session.execute(
        update(PairingCode)
        .where(
            PairingCode.code_hash == digest,
            PairingCode.used_at.is_(None),
            PairingCode.expires_at > now,
        )
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if cast(CursorResult[Any], spent).rowcount != 1:
        raise PairingCodeNotFound()
    pairing_id, principal = session.execute(
        select(PairingCode.id, PairingCode.principal).where(PairingCode.code_hash == digest)
    ).one()
    label = device_label(device)
    replaces = tuple(device_credentials(session, principal, device_id)) if device_id else ()
    credential, token = issue(
        session, kind="client", principal=principal, scopes=SCOPES, label=label
    )
    credential.device_id = device_id or None
    session.execute(
        update(PairingCode)
        .where(PairingCode.id == pairing_id)
        .values(credential_id=credential.id)
        .execution_options(synchronize_session=False)
    )
    return Redeemed(
        pairing_id=pairing_id,
        credential_id=credential.id,
        principal=principal,
        label=label,
        token=token,
        replaces=replaces,
    )
