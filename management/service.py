"""The one Management service: the running Mind serves it online, the CLI runs it offline.

Each mutation runs in one transaction with its audit row (and, for a revocation, the durable
`credential_revoked` event), so a failure anywhere leaves none of them. Live effects of an
online revocation (ending the credential's streams) happen only after that commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from management import approvals, audit, conversations, status
from management.errors import InvalidArgument, NotFound
from management.live import MindLink
from management.records import (
    AuditRecord,
    ConversationDetail,
    ConversationInfo,
    CredentialInfo,
    Deletion,
    IssuedCredential,
    Revocation,
    Rotation,
    StatusReport,
)
from mind import credentials
from mind.approvals.model import ApprovalRecord
from mind.store.models import Credential
from mind.store.outbox import append_event
from tobe import __version__

CREDENTIAL_REVOKED = "credential_revoked"
MAX_LIMIT = 10_000


def _credential_details(info: CredentialInfo) -> dict[str, object]:
    """Secret-free audit details of a credential."""
    return {
        "kind": info.kind,
        "principal": info.principal,
        "scopes": list(info.scopes),
        "prefix": info.prefix,
        "label": info.label,
        "expires_at": info.expires_at.isoformat() if info.expires_at else None,
    }


def _limit(limit: int) -> int:
    if limit < 0 or limit > MAX_LIMIT:
        raise InvalidArgument(f"limit must be between 0 (default) and {MAX_LIMIT}, got {limit}")
    return limit


async def _announce_revoked(session: AsyncSession, credential_id: str, principal: str) -> None:
    """Durable system event: gateways close every connection using this credential."""
    await append_event(
        session,
        type=CREDENTIAL_REVOKED,
        conversation_key="",
        audience=[],
        payload={"credential_id": credential_id, "principal": principal},
    )


class ManagementService:
    """Operator commands against the store, plus the running Mind's live state when linked."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        database_url: str,
        data_dir: Path,
        mind: MindLink | None = None,
    ) -> None:
        self._sessions = sessions
        self._database_url = database_url
        self._data_dir = data_dir
        self._mind = mind

    @property
    def mode(self) -> str:
        return "online" if self._mind is not None else "offline"

    # Credentials

    async def create_credential(
        self,
        *,
        kind: str,
        principal: str,
        scopes: Sequence[str] = (),
        expires_at: datetime | None = None,
        label: str = "",
        actor: str,
    ) -> IssuedCredential:
        async with self._sessions() as session, session.begin():
            row, secret = await credentials.issue(
                session,
                kind=kind,
                principal=principal,
                scopes=scopes,
                expires_at=expires_at,
                label=label,
            )
            info = CredentialInfo.of(row)
            await audit.record(
                session,
                action="credential.create",
                actor=actor,
                target=info.id,
                details=_credential_details(info),
            )
        return IssuedCredential(credential=info, secret=secret)

    async def list_credentials(
        self, *, include_revoked: bool = False, principal: str = "", kind: str = ""
    ) -> list[CredentialInfo]:
        query = select(Credential)
        if not include_revoked:
            query = query.where(Credential.revoked_at.is_(None))
        if principal:
            query = query.where(Credential.principal == principal)
        if kind:
            query = query.where(Credential.kind == kind)
        async with self._sessions() as session:
            rows = await session.scalars(query.order_by(Credential.created_at, Credential.id))
            return [CredentialInfo.of(row) for row in rows]

    async def get_credential(self, credential_id: str) -> CredentialInfo:
        async with self._sessions() as session:
            row = await session.get(Credential, credential_id)
        if row is None:
            raise NotFound(
                f"no credential with id {credential_id!r}; "
                "`tobe admin credentials list --all` shows every id"
            )
        return CredentialInfo.of(row)

    async def revoke_credential(self, credential_id: str, *, actor: str) -> Revocation:
        async with self._sessions() as session, session.begin():
            info = CredentialInfo.of(await credentials.revoke(session, credential_id))
            await _announce_revoked(session, info.id, info.principal)
            await audit.record(
                session,
                action="credential.revoke",
                actor=actor,
                target=info.id,
                details=_credential_details(info),
            )
        return Revocation(credential=info, disconnected=self._disconnect(info.id))

    async def rotate_credential(self, credential_id: str, *, actor: str) -> Rotation:
        async with self._sessions() as session, session.begin():
            row, secret, revoked_id = await credentials.rotate(session, credential_id)
            info = CredentialInfo.of(row)
            await _announce_revoked(session, revoked_id, info.principal)
            await audit.record(
                session,
                action="credential.rotate",
                actor=actor,
                target=revoked_id,
                details={**_credential_details(info), "new_id": info.id},
            )
        return Rotation(
            credential=info,
            secret=secret,
            revoked_id=revoked_id,
            disconnected=self._disconnect(revoked_id),
        )

    def _disconnect(self, credential_id: str) -> int:
        """After the revocation committed: wake the gateways, end the credential's streams."""
        if self._mind is None:
            return 0
        disconnected = self._mind.disconnect_credential(credential_id)
        self._mind.durable_committed()
        return disconnected

    # Status and audit

    async def status(self) -> StatusReport:
        async with self._sessions() as session:
            size = await status.database_size(session, self._database_url)
            revision = await status.schema_revision(session)
            conversation_count = await status.conversation_count(session)
            active_runs = await status.active_run_count(session)
        mind = self._mind
        return StatusReport(
            mode=self.mode,
            version=__version__,
            data_dir=str(self._data_dir),
            database_url=status.display_url(self._database_url),
            database_size_bytes=size,
            schema_revision=revision,
            conversations=conversation_count,
            active_runs=active_runs,
            hands=tuple(mind.hands()) if mind else (),
            gateway_subscribers=mind.gateway_subscribers() if mind else 0,
            services=tuple(mind.services()) if mind else (),
        )

    async def audit_entries(
        self,
        *,
        action: str = "",
        target: str = "",
        actor: str = "",
        since: datetime | None = None,
        limit: int = 0,
    ) -> list[AuditRecord]:
        async with self._sessions() as session:
            return await audit.entries(
                session,
                action=action,
                target=target,
                actor=actor,
                since=since,
                limit=_limit(limit),
            )

    # Conversations

    async def list_conversations(
        self, *, owner: str = "", limit: int = 0
    ) -> list[ConversationInfo]:
        async with self._sessions() as session:
            return await conversations.list_conversations(session, owner=owner, limit=_limit(limit))

    async def inspect_conversation(self, key: str) -> ConversationDetail:
        async with self._sessions() as session:
            return await conversations.inspect_conversation(session, key)

    async def delete_conversation(self, key: str, *, actor: str) -> Deletion:
        async with self._sessions() as session, session.begin():
            deletion = await conversations.delete_conversation(session, key)
            await audit.record(
                session,
                action="conversation.delete",
                actor=actor,
                target=key,
                details={"removed": deletion.removed},
            )
        if self._mind is not None:
            await self._mind.forget_conversation(key)
        return deletion

    # Approvals

    async def list_approvals(
        self, *, pending_only: bool = False, conversation_key: str = "", limit: int = 0
    ) -> list[ApprovalRecord]:
        async with self._sessions() as session:
            return await approvals.list_approvals(
                session,
                pending_only=pending_only,
                conversation_key=conversation_key,
                limit=_limit(limit),
            )

    async def get_approval(self, approval_id: str) -> ApprovalRecord:
        async with self._sessions() as session:
            return await approvals.get_approval(session, approval_id)
