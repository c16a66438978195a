"""Errors of the credentials kernel, each a `mind.errors` kind (which gives its status code).

    InvalidCredentialRequest   InvalidInput     bad kind, principal, scope, expiry or ttl
    └── MalformedPairingCode                    not the shape of a pairing code at all
    CredentialNotFound         NotFound         no credential with that id
    PairingCodeNotFound        NotFound         a pairing code unknown, already used or expired
    TokenNotAccepted           Unauthenticated  a token naming no live client credential (sign-out)
    CredentialInactive         WrongState       the credential can no longer be changed or used
    ├── CredentialAlreadyRevoked                already revoked
    └── CredentialExpired                       past its expiry

Messages never contain a secret, a token or a pairing code.
Authentication itself never raises these: an unusable token simply authenticates as nobody.
"""

from __future__ import annotations

from mind.errors import InvalidInput, NotFound, Unauthenticated, WrongState
from tobe.mind_answers import CLIENT_CREDENTIAL_REFUSED


class InvalidCredentialRequest(InvalidInput):
    """The request to issue a credential is malformed; nothing was stored."""


class CredentialNotFound(NotFound):
    def __init__(self, credential_id: str) -> None:
        super().__init__(f"no credential with id {credential_id!r}")
        self.credential_id = credential_id


class CredentialInactive(WrongState):
    """The credential is revoked or expired."""


class CredentialAlreadyRevoked(CredentialInactive):
    def __init__(self, credential_id: str) -> None:
        super().__init__(f"credential {credential_id!r} is already revoked")
        self.credential_id = credential_id


class CredentialExpired(CredentialInactive):
    def __init__(self, credential_id: str) -> None:
        super().__init__(f"credential {credential_id!r} has expired; issue a new one instead")
        self.credential_id = credential_id


class MalformedPairingCode(InvalidCredentialRequest):
    """What was typed cannot be a pairing code (wrong length or characters)."""

    def __init__(self) -> None:
        super().__init__(
            "malformed pairing code: expected ten letters and digits like ABCDE-12345 "
            "(case, spaces and dashes do not matter)"
        )


class PairingCodeNotFound(NotFound):
    """Unknown, used and expired codes are not told apart: a guesser learns nothing."""

    def __init__(self) -> None:
        super().__init__(
            "pairing code not recognised, already used or expired: make a new one with "
            "`tobe admin pair`"
        )


class TokenNotAccepted(Unauthenticated):
    """The token given to sign out is malformed, unknown, revoked, expired or not a client's."""

    def __init__(self) -> None:
        super().__init__(CLIENT_CREDENTIAL_REFUSED)
