"""Errors of the credentials kernel.

    CredentialError
    ├── InvalidCredentialRequest   caller misuse: bad kind, principal, scope or expiry
    ├── CredentialNotFound         no credential with that id
    └── CredentialInactive         the credential can no longer be changed or used
        ├── CredentialRevoked      already revoked
        └── CredentialExpired      past its expiry

Servicers map them once: InvalidCredentialRequest → INVALID_ARGUMENT, CredentialNotFound →
NOT_FOUND, CredentialInactive → FAILED_PRECONDITION. Messages never contain a secret.
Authentication itself never raises these: an unusable token simply authenticates as nobody.
"""

from __future__ import annotations


class CredentialError(Exception):
    """Base class of every credentials kernel error."""


class InvalidCredentialRequest(CredentialError, ValueError):
    """The request to issue a credential is malformed; nothing was stored."""


class CredentialNotFound(CredentialError, LookupError):
    def __init__(self, credential_id: str) -> None:
        super().__init__(f"no credential with id {credential_id!r}")
        self.credential_id = credential_id


class CredentialInactive(CredentialError):
    """The credential is revoked or expired."""


class CredentialRevoked(CredentialInactive):
    def __init__(self, credential_id: str) -> None:
        super().__init__(f"credential {credential_id!r} is already revoked")
        self.credential_id = credential_id


class CredentialExpired(CredentialInactive):
    def __init__(self, credential_id: str) -> None:
        super().__init__(f"credential {credential_id!r} has expired; issue a new one instead")
        self.credential_id = credential_id
