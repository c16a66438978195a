"""Revoking a credential inside a unit of work: the one path every revocation takes.

An operator's `tobe admin credentials revoke` and a device signing itself out
(`Mind.SignOut`) both revoke here, so both leave the same trace: the credential's `revoked_at`,
the durable `credential_revoked` event (gateways close every connection of the credential; the
running Mind cuts its streams as the event commits, `mind.credentials.live_calls`) and a
secret-free audit row, all in the caller's transaction.
"""

from __future__ import annotations

from mind import credentials
from mind.credentials.live_calls import CREDENTIAL_REVOKED
from mind.events.views import CredentialRevokedView
from mind.management import audit
from mind.management.records import CredentialInfo
from mind.store.write_tx import WriteTx


def credential_details(info: CredentialInfo) -> dict[str, object]:
    """Secret-free audit details of a credential."""
    return {
        "kind": info.kind,
        "principal": info.principal,
        "scopes": list(info.scopes),
        "prefix": info.prefix,
        "label": info.label,
        "expires_at": info.expires_at.isoformat() if info.expires_at else None,
    }


def announce_revoked(tx: WriteTx, credential_id: str, principal: str) -> None:
    """Durable system event: gateways close every connection using this credential."""
    tx.event(
        type=CREDENTIAL_REVOKED,
        conversation_key="",
        audience=[],
        payload=CredentialRevokedView(credential_id, principal).to_payload(),
    )


def revoke(
    tx: WriteTx, credential_id: str, *, actor: str, action: str = "credential.revoke"
) -> CredentialInfo:
    """Revoke the credential, announce it and audit it as `action` by `actor`."""
    info = CredentialInfo.of(credentials.revoke(tx.session, credential_id))
    announce_revoked(tx, info.id, info.principal)
    audit.record(
        tx.session,
        action=action,
        actor=actor,
        target=info.id,
        details=credential_details(info),
    )
    return info
