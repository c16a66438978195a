"""Pairing a device and signing it out, each one unit of the store's writer with its audit row.

The Management service makes codes for operators (`tobe admin pair`); the Mind service makes
them for a signed-in client (`/pair`), redeems them for a gateway and signs a device out. All
of them go through here, so every code and every paired credential leaves the same
secret-free trace: `pairing.create` (principal, expiry, who asked; never the code),
`pairing.redeem` (the new credential and its device label), `pairing.replace` (a device paired
again: its earlier credential's revocation) and `credential.sign_out` (the revocation, by the
principal signing out). A sign-out revokes the way an operator does
(`revocation`): the running Mind cuts the credential's streams as it commits and gateways
close its connections when they see the `credential_revoked` event.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from mind import credentials
from mind.credentials import CredentialAlreadyRevoked, TokenNotAccepted
from mind.credentials import pairing as codes
from mind.credentials.pairing import IssuedCode, Redeemed
from mind.management import audit, revocation
from mind.management.records import CredentialInfo
from mind.store.database import Database
from mind.store.write_tx import WriteTx

SIGN_OUT = "credential.sign_out"
# A device paired again: its earlier credential is revoked.
REPLACE = "pairing.replace"


class Pairing:
    """Pairing codes and sign-outs on one store.

    `now` is the clock codes are made and checked with; `disconnect` ends a revoked
    credential's live streams (the running Mind's `LiveCalls.revoke`; None offline, where
    nothing is connected).
    """

    def __init__(
        self,
        database: Database,
        *,
        now: Callable[[], datetime],
        disconnect: Callable[[str], int] | None = None,
    ) -> None:
        self._database = database
        self._now = now
        self._disconnect = disconnect

    async def create(self, principal: str, ttl_seconds: int, *, actor: str) -> IssuedCode:
        """A new code for `principal`, valid `ttl_seconds` (0: the default)."""
        now = self._now()

        def unit(tx: WriteTx) -> IssuedCode:
            issued = codes.create(
                tx.session,
                principal=principal,
                ttl_seconds=ttl_seconds,
                created_by=actor,
                now=now,
            )
            audit.record(
                tx.session,
                action="pairing.create",
                actor=actor,
                target=principal,
                details={
                    "pairing_id": issued.id,
                    "principal": principal,
                    "expires_at": issued.expires_at.isoformat(),
                },
            )
            return issued

        return await self._database.write(unit)

    async def redeem(self, code: str, device: str, device_id: str = "") -> Redeemed:
        """Spend `code` for a client credential labelled after `device`; the credential the
        same `device_id` had for the principal is revoked in the same unit (`pairing.replace`)."""
        now = self._now()

        def unit(tx: WriteTx) -> Redeemed:
            redeemed = codes.redeem(tx.session, code, device, now=now, device_id=device_id)
            for earlier in redeemed.replaces:
                revocation.revoke(tx, earlier, actor=redeemed.principal, action=REPLACE)
            audit.record(
                tx.session,
                action="pairing.redeem",
                actor=redeemed.principal,
                target=redeemed.credential_id,
                details={
                    "pairing_id": redeemed.pairing_id,
                    "principal": redeemed.principal,
                    "scopes": list(codes.SCOPES),
                    "label": redeemed.label,
                },
            )
            return redeemed

        redeemed = await self._database.write(unit)
        if self._disconnect is not None:
            for earlier in redeemed.replaces:
                self._disconnect(earlier)
        return redeemed

    async def sign_out(self, token: str) -> CredentialInfo:
        """Revoke the live client credential `token` names; TokenNotAccepted when it names
        none (malformed, unknown, revoked, expired, or not a client's)."""

        def unit(tx: WriteTx) -> CredentialInfo:
            identity = credentials.authenticate(tx.session, token)
            if identity is None or identity.kind != "client":
                raise TokenNotAccepted()
            try:
                return revocation.revoke(
                    tx, identity.credential_id, actor=identity.principal, action=SIGN_OUT
                )
            except CredentialAlreadyRevoked:  # a concurrent revocation won
                raise TokenNotAccepted() from None

        info = await self._database.write(unit)
        if self._disconnect is not None:
            self._disconnect(info.id)
        return info
