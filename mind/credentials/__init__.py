"""Credentials kernel: issue, authenticate, revoke and rotate bearer tokens.

Tokens look like `tobe_<prefix>_<secret>`; the store keeps the prefix (lookup key) and the
SHA-256 of the secret, never the secret. Kinds: `client`, `hand`, `service`.
"""

from mind.credentials.errors import (
    CredentialAlreadyRevoked,
    CredentialExpired,
    CredentialInactive,
    CredentialNotFound,
    InvalidCredentialRequest,
    MalformedPairingCode,
    PairingCodeNotFound,
    TokenNotAccepted,
)
from mind.credentials.identity import Identity
from mind.credentials.store import (
    authenticate,
    issue,
    revoke,
    rotate,
    store_authenticator,
)
from mind.credentials.tokens import parse_token

__all__ = [
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
