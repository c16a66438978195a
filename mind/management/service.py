"""The one Management service: the running Mind serves it online, the CLI runs it offline.

Each mutation is one unit of the store's writer with its audit row (and, for a revocation, the
durable `credential_revoked` event, which the store hands to the event bus once committed), so
a failure anywhere leaves none of them; the exception is a compaction, which the running Mind
commits itself and which is audited in a unit of its own once it has. Live effects of an
online mutation happen only at or after that commit: the Mind cuts a revoked credential's
streams as the commit is handed to its event bus (`mind.credentials.live_calls`), and drops a
deleted conversation's actor afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind import credentials
from mind.approvals.model import ApprovalRecord
from mind.awareness.health import AdapterReport
from mind.conversation import choices
from mind.credentials.pairing import IssuedCode
from mind.credentials.revocation_reports import Expected
from mind.credentials.tokens import parse_token, secret_matches
from mind.errors import InvalidInput, NotFound, WrongState
from mind.events.action_views import ScheduledActionView
from mind.events.views import CompactionView, ConversationView
from mind.management import approvals, audit, conversations, revocation, status
from mind.management.live import MindLink
from mind.management.pairing import Pairing
from mind.management.records import (
    AuditRecord,
    ConversationDetail,
    CredentialInfo,
    Deletion,
    IssuedCredential,
    Revocation,
    Rotation,
    StatusReport,
)
from mind.management.widget_types import WidgetTypeCommands
from mind.memory.store import MemoryListing, delete_entry, listing
from mind.profiles.declared import declared_profiles
from mind.profiles.errors import ProfileError
from mind.providers.prices import Pricing
from mind.scheduler import records as schedules
from mind.scheduler.clock import SystemClock
from mind.scheduler.model import Clock
from mind.store.database import Database
from mind.store.models import Conversation, Credential
from mind.store.write_tx import WriteTx
from mind.usage.reports import UsageReports
from tobe import __version__
from tobe.config import ProfilesSettings
from tobe.scopes import UnknownScope, check_scopes

MAX_LIMIT = 10_000
COMPACT_OFFLINE = (
    "compacting needs the running Mind, which calls the model: start it (`tobe up`) and run "
    "this again"
)


def _limit(limit: int) -> int:
    if limit < 0 or limit > MAX_LIMIT:
        raise InvalidInput(f"limit must be between 0 (default) and {MAX_LIMIT}, got {limit}")
    return limit


class ManagementService:
    """Operator commands against the store, plus the running Mind's live state when linked."""

    def __init__(
        self,
        database: Database,
        *,
        database_url: str,
        data_dir: Path,
        profiles: ProfilesSettings | None = None,
        mind: MindLink | None = None,
        clock: Clock | None = None,
        usage: UsageReports | None = None,
    ) -> None:
        self._database = database
        # Token usage (`tobe usage`); online, the Mind's reports flush its buffered rows first.
        self.usage = usage or UsageReports(database, Pricing.of())
        # The operator's widget types (`tobe admin widget-types`).
        self.widget_types = WidgetTypeCommands(
            database, changed=mind.widget_types_changed if mind is not None else None
        )
        # The scheduler's clock: a resumed action is next due after its now.
        self._clock = clock or SystemClock()
        self._profiles = profiles or ProfilesSettings()
        self._database_url = database_url
        self._data_dir = data_dir
        self._mind = mind
        self._pairing = Pairing(database, now=self._clock.now)

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
        """InvalidInput, before anything is stored, for a scope `tobe.scopes` does not list
        for `kind`."""
        try:
            check_scopes(kind, scopes)
        except UnknownScope as exc:
            raise InvalidInput(str(exc)) from None

        def unit(tx: WriteTx) -> IssuedCredential:
            row, secret = credentials.issue(
                tx.session,
                kind=kind,
                principal=principal,
                scopes=scopes,
                expires_at=expires_at,
                label=label,
            )
            info = CredentialInfo.of(row)
            audit.record(
                tx.session,
                action="credential.create",
                actor=actor,
                target=info.id,
                details=revocation.credential_details(info),
            )
            return IssuedCredential(credential=info, secret=secret)

        return await self._database.write(unit)

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
        ordered = query.order_by(Credential.created_at, Credential.id)

        def read(session: Session) -> list[CredentialInfo]:
            return [CredentialInfo.of(row) for row in session.scalars(ordered)]

        return await self._database.read(read)

    async def get_credential(self, credential_id: str) -> CredentialInfo:
        row = await self._database.read(lambda session: session.get(Credential, credential_id))
        if row is None:
            raise NotFound(
                f"no credential with id {credential_id!r}; "
                "`tobe admin credentials list --all` shows every id"
            )
        return CredentialInfo.of(row)

    async def identify_credential(self, token: str) -> tuple[CredentialInfo, bool]:
        """The credential `token` names by its prefix (in any state), and whether the token's
        secret is that credential's."""
        parts = parse_token(token.strip())
        if parts is None:
            raise InvalidInput(
                "that is not a ToBe credential (those look like tobe_<prefix>_<secret>)"
            )

        def read(session: Session) -> tuple[CredentialInfo, bool] | None:
            row = session.scalar(select(Credential).where(Credential.prefix == parts.prefix))
            if row is None:
                return None
            return CredentialInfo.of(row), secret_matches(parts.secret, row.secret_hash)

        found = await self._database.read(read)
        if found is None:
            raise NotFound(
                f"no credential of the data directory {self._data_dir} has the prefix "
                f"{parts.prefix}: it was issued by another ToBe (another --data-dir?) or is "
                "mistyped"
            )
        return found

    async def revoke_credential(self, credential_id: str, *, actor: str) -> Revocation:
        expected = self._expect_reports(credential_id)
        try:
            info = await self._database.write(
                lambda tx: revocation.revoke(tx, credential_id, actor=actor)
            )
        except BaseException:
            self._forget_reports(expected)
            raise
        closed, unreported = await self._disconnected(credential_id, expected)
        return Revocation(credential=info, disconnected=closed, unreported_gateways=unreported)

    async def rotate_credential(self, credential_id: str, *, actor: str) -> Rotation:
        def unit(tx: WriteTx) -> tuple[CredentialInfo, str, str]:
            row, secret, revoked_id = credentials.rotate(tx.session, credential_id)
            info = CredentialInfo.of(row)
            revocation.announce_revoked(tx, revoked_id, info.principal)
            audit.record(
                tx.session,
                action="credential.rotate",
                actor=actor,
                target=revoked_id,
                details={**revocation.credential_details(info), "new_id": info.id},
            )
            return info, secret, revoked_id

        expected = self._expect_reports(credential_id)
        try:
            info, secret, revoked_id = await self._database.write(unit)
        except BaseException:
            self._forget_reports(expected)
            raise
        closed, unreported = await self._disconnected(revoked_id, expected)
        return Rotation(
            credential=info,
            secret=secret,
            revoked_id=revoked_id,
            disconnected=closed,
            unreported_gateways=unreported,
        )

    async def create_pairing_code(
        self, principal: str, ttl_seconds: int, *, actor: str
    ) -> IssuedCode:
        """A one-time code with which a device signs in as `principal` (`tobe admin pair`)."""
        return await self._pairing.create(principal, ttl_seconds, actor=actor)

    def _expect_reports(self, credential_id: str) -> Expected | None:
        """Count the gateways' reports for a revocation about to commit (None offline)."""
        if self._mind is None:
            return None
        return self._mind.revocation_reports.expect(credential_id)

    def _forget_reports(self, expected: Expected | None) -> None:
        if self._mind is not None and expected is not None:
            self._mind.revocation_reports.forget(expected)

    async def _disconnected(self, credential_id: str, expected: Expected | None) -> tuple[int, int]:
        """Connections a committed revocation closed, wherever they were: the credential's
        streams on the Mind (cut at the commit; any registered since are cut now) and the
        client connections the gateways reported closing. Returns them and how many gateways
        did not report in time."""
        if self._mind is None or expected is None:
            return 0, 0
        streams = self._mind.disconnect_credential(credential_id)
        reported = await self._mind.revocation_reports.collect(expected)
        return streams + reported.closed, reported.unreported

    # Status and audit

    async def status(self) -> StatusReport:
        def read(session: Session) -> tuple[int, str, int, int]:
            return (
                status.database_size(session, self._database_url),
                status.schema_revision(session),
                status.conversation_count(session),
                status.active_run_count(session),
            )

        size, revision, conversation_count, active_runs = await self._database.read(read)
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
            adapters=await mind.adapters() if mind else AdapterReport(),
            model_budget=mind.model_budget() if mind else None,
            decision_failures=dict(mind.decision_failures()) if mind else {},
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
        limit = _limit(limit)
        return await self._database.read(
            lambda session: audit.entries(
                session, action=action, target=target, actor=actor, since=since, limit=limit
            )
        )

    # Conversations

    async def list_conversations(
        self, *, owner: str = "", limit: int = 0
    ) -> list[ConversationView]:
        limit = _limit(limit)
        return await self._database.read(
            lambda session: conversations.list_conversations(session, owner=owner, limit=limit)
        )

    async def inspect_conversation(self, key: str) -> ConversationDetail:
        return await self._database.read(
            lambda session: conversations.inspect_conversation(session, key)
        )

    async def delete_conversation(self, key: str, *, actor: str) -> Deletion:
        def unit(tx: WriteTx) -> Deletion:
            deletion = conversations.delete_conversation(tx.session, key)
            audit.record(
                tx.session,
                action="conversation.delete",
                actor=actor,
                target=key,
                details={"removed": deletion.removed},
            )
            return deletion

        deletion = await self._database.write(unit)
        if self._mind is not None:
            await self._mind.forget_conversation(key)
        return deletion

    async def list_memory(self, key: str) -> MemoryListing:
        def read(session: Session) -> MemoryListing:
            conversations.require(session, key)
            return listing(session, key)

        return await self._database.read(read)

    async def delete_memory(self, key: str, memory_key: str, *, actor: str) -> bool:
        """Delete one memory entry (announced like the owner's delete) with its audit row."""

        def unit(tx: WriteTx) -> bool:
            conversations.require(tx.session, key)
            existed = delete_entry(tx, key, memory_key, run_id="")
            audit.record(
                tx.session,
                action="memory.delete",
                actor=actor,
                target=key,
                details={"key": memory_key, "existed": existed},
            )
            return existed

        return await self._database.write(unit)

    # Scheduled actions

    async def list_schedules(
        self, conversation_key: str | None, include_ended: bool
    ) -> list[ScheduledActionView]:
        def read(session: Session) -> list[ScheduledActionView]:
            if conversation_key is not None:
                conversations.require(session, conversation_key)
            return schedules.list_schedules(session, conversation_key, include_ended)

        return await self._database.read(read)

    async def change_schedule(
        self, schedule_id: str, change: schedules.Change, *, actor: str
    ) -> ScheduledActionView:
        """Pause, resume or delete a scheduled action (announced like the owner's change) with
        its audit row. Offline the Mind's next start reads the change."""
        now = self._clock.now()

        def unit(tx: WriteTx) -> ScheduledActionView:
            view = schedules.change_schedule(tx, schedule_id, change, now)
            audit.record(
                tx.session,
                action=f"schedule.{change}",
                actor=actor,
                target=schedule_id,
                details={"conversation_key": view.conversation_key, "state": view.state.value},
            )
            return view

        return await self._database.write(unit)

    async def compact_context(self, key: str, *, actor: str) -> CompactionView:
        """Compact a conversation's context now, through the running Mind, and audit it.

        The summary is made by the model, which only the running Mind calls, so offline this
        refuses. The audit row is its own unit after the compaction committed: the compaction
        is the actor's unit of work, and a failed audit cannot undo it.
        """
        if self._mind is None:
            raise WrongState(COMPACT_OFFLINE)
        compaction = await self._mind.compact_conversation(key)

        def unit(tx: WriteTx) -> None:
            audit.record(
                tx.session,
                action="conversation.compact",
                actor=actor,
                target=key,
                details={
                    "generation": compaction.generation,
                    "through_message_id": compaction.through_message_id,
                    "messages_summarised": compaction.messages_summarised,
                },
            )

        await self._database.write(unit)
        return compaction

    async def change_profile(self, key: str, profile: str, *, actor: str) -> ConversationView:
        """Set the profile a conversation runs with, and audit it.

        Online the running Mind changes it (and checks the profile against its tools); offline
        the row changes here, the profile checked against the configured ones.
        """
        if self._mind is not None:
            view = await self._mind.change_profile(key, profile)

            def audited(tx: WriteTx) -> None:
                self._audit_profile(tx, key, view.profile, actor)

            await self._database.write(audited)
            return view
        name = self._configured_profile(profile)

        def unit(tx: WriteTx) -> ConversationView:
            row = tx.session.get(Conversation, key)
            if row is None:
                raise NotFound(f"no conversation {key!r}")
            view = choices.change(tx, row, lambda r: setattr(r, "profile", name))
            self._audit_profile(tx, key, name, actor)
            return view

        return await self._database.write(unit)

    def _configured_profile(self, profile: str) -> str:
        name = profile or self._profiles.default
        try:
            known = declared_profiles(self._profiles)
        except ProfileError as exc:
            raise WrongState(str(exc)) from exc
        found = known.get(name)
        if found is None:
            raise InvalidInput(f"no profile {name!r}; known profiles: {', '.join(known)}")
        if isinstance(found, ProfileError):
            raise InvalidInput(str(found))
        return name

    @staticmethod
    def _audit_profile(tx: WriteTx, key: str, profile: str, actor: str) -> None:
        audit.record(
            tx.session,
            action="conversation.profile",
            actor=actor,
            target=key,
            details={"profile": profile},
        )

    # Approvals

    async def list_approvals(
        self, *, pending_only: bool = False, conversation_key: str = "", limit: int = 0
    ) -> list[ApprovalRecord]:
        limit = _limit(limit)
        return await self._database.read(
            lambda session: approvals.list_approvals(
                session, pending_only=pending_only, conversation_key=conversation_key, limit=limit
            )
        )

    async def get_approval(self, approval_id: str) -> ApprovalRecord:
        return await self._database.read(
            lambda session: approvals.get_approval(session, approval_id)
        )
