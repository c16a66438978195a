"""The Management service itself on every store backend (SQLite, and PostgreSQL when set up).

The CLI tests run on SQLite; these call the service directly, so the same mutations, audit
atomicity and deletions are shown on PostgreSQL too, and that the events they commit reach the
store's `on_commit` (the event bus in the Mind).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from admin_store import TEAM_ROWS, seed_conversations
from sqlalchemy import func, select, text
from sqlalchemy.exc import SQLAlchemyError

from mind.awareness.health import AdapterReport
from mind.credentials import CredentialAlreadyRevoked
from mind.credentials.revocation_reports import RevocationReports
from mind.errors import InvalidInput, NotFound, WrongState
from mind.events.views import CompactionTrigger, CompactionView, ConversationView
from mind.management.live import MindLink
from mind.management.service import COMPACT_OFFLINE, ManagementService
from mind.store.database import Database
from mind.store.models import Conversation, Credential, ManagementAudit, OutboxEvent
from mind.store.write_tx import WriteTx

FAIL_AUDIT = {
    "sqlite": [
        "CREATE TRIGGER inject_audit_failure BEFORE INSERT ON management_audit "
        "BEGIN SELECT RAISE(ABORT, 'injected audit failure'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION inject_audit_failure() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'injected audit failure'; END $$",
        "CREATE TRIGGER inject_audit_failure BEFORE INSERT ON management_audit "
        "FOR EACH ROW EXECUTE FUNCTION inject_audit_failure()",
    ],
}


@pytest.fixture
def service(database: Database, store_url: str, tmp_path: Path) -> ManagementService:
    return ManagementService(database, database_url=store_url, data_dir=tmp_path)


async def count(database: Database, model: type) -> int:
    return await database.read(
        lambda session: int(session.scalar(select(func.count()).select_from(model)) or 0)
    )


async def test_credential_lifecycle_is_audited_with_a_revocation_event(
    service: ManagementService, database: Database, database_events: list[OutboxEvent]
) -> None:
    issued = await service.create_credential(
        kind="hand", principal="laptop", scopes=["serve-all"], actor="ops"
    )
    rotation = await service.rotate_credential(issued.credential.id, actor="ops")
    revocation = await service.revoke_credential(rotation.credential.id, actor="ops")
    assert revocation.credential.revoked_at is not None and revocation.disconnected == 0
    with pytest.raises(CredentialAlreadyRevoked):
        await service.revoke_credential(issued.credential.id, actor="ops")
    entries = await service.audit_entries()
    assert [(e.action, e.actor) for e in entries] == [
        ("credential.revoke", "ops"),
        ("credential.rotate", "ops"),
        ("credential.create", "ops"),
    ]
    for entry in entries:
        assert issued.secret.split("_", 2)[2] not in str(entry.details)
        assert rotation.secret.split("_", 2)[2] not in str(entry.details)
    events = await database.read(
        lambda session: session.scalars(select(OutboxEvent).order_by(OutboxEvent.id)).all()
    )
    assert [(e.type, e.payload["credential_id"]) for e in events] == [
        ("credential_revoked", issued.credential.id),
        ("credential_revoked", rotation.credential.id),
    ]
    assert [e.id for e in database_events] == [e.id for e in events]
    status = await service.status()
    assert status.mode == "offline" and status.schema_revision and status.database_size_bytes


async def test_failed_audit_leaves_no_mutation(
    service: ManagementService, database: Database, database_events: list[OutboxEvent]
) -> None:
    issued = await service.create_credential(kind="client", principal="c", actor="ops")

    def fail_audit_inserts(tx: WriteTx) -> None:
        for statement in FAIL_AUDIT[tx.session.get_bind().dialect.name]:
            tx.session.execute(text(statement))

    await database.write(fail_audit_inserts)
    with pytest.raises(SQLAlchemyError):
        await service.create_credential(kind="client", principal="d", actor="ops")
    with pytest.raises(SQLAlchemyError):
        await service.revoke_credential(issued.credential.id, actor="ops")
    assert await count(database, Credential) == 1
    assert (await service.get_credential(issued.credential.id)).revoked_at is None
    assert await count(database, OutboxEvent) == 0 and database_events == []
    assert await count(database, ManagementAudit) == 1


async def test_deleting_a_conversation_removes_everything_it_owns(
    service: ManagementService, database: Database, store_url: str
) -> None:
    seed_conversations(store_url)
    deletion = await service.delete_conversation("g_team", actor="ops")
    assert deletion.removed == TEAM_ROWS
    assert [c.key for c in await service.list_conversations()] == ["p_bob"]
    assert await count(database, Conversation) == 1
    with pytest.raises(NotFound):
        await service.inspect_conversation("g_team")
    (entry,) = await service.audit_entries(action="conversation.")
    assert entry.details == {"removed": TEAM_ROWS}


COMPACTION = CompactionView(
    generation=2,
    through_message_id=60,
    messages_summarised=48,
    tokens_before=41_200,
    tokens_after=9_800,
    trigger=CompactionTrigger.REQUESTED,
    summary_calls=1,
    run_id="",
)


def linked(compact: Callable[[str], Awaitable[CompactionView]]) -> MindLink:
    """A running Mind's link that only compacts (through `compact`)."""

    async def forget(key: str) -> None:
        raise AssertionError(f"nothing is deleted here ({key})")

    async def change_profile(key: str, profile: str) -> ConversationView:
        raise AssertionError(f"no profile changes here ({key})")

    async def adapters() -> AdapterReport:
        return AdapterReport()

    return MindLink(
        disconnect_credential=lambda credential_id: 0,
        revocation_reports=RevocationReports(),
        hands=list,
        gateway_subscribers=lambda: 0,
        services=list,
        adapters=adapters,
        forget_conversation=forget,
        compact_conversation=compact,
        change_profile=change_profile,
        model_budget=lambda: None,
    )


async def test_a_compaction_through_the_mind_is_audited_after_it_committed(
    database: Database, store_url: str, tmp_path: Path
) -> None:
    asked: list[str] = []

    async def compact(key: str) -> CompactionView:
        asked.append(key)
        return COMPACTION

    service = ManagementService(
        database, database_url=store_url, data_dir=tmp_path, mind=linked(compact)
    )
    assert await service.compact_context("g_team", actor="ops") == COMPACTION
    assert asked == ["g_team"]
    (entry,) = await service.audit_entries(action="conversation.compact")
    assert (entry.actor, entry.target) == ("ops", "g_team")
    assert entry.details == {
        "generation": 2,
        "through_message_id": 60,
        "messages_summarised": 48,
    }


async def test_a_compaction_the_mind_refuses_is_not_audited(
    database: Database, store_url: str, tmp_path: Path
) -> None:
    async def compact(key: str) -> CompactionView:
        raise WrongState(f"nothing in {key} is old enough to summarise")

    service = ManagementService(
        database, database_url=store_url, data_dir=tmp_path, mind=linked(compact)
    )
    with pytest.raises(WrongState):
        await service.compact_context("p_bob", actor="ops")
    assert await service.audit_entries() == []


async def test_compacting_without_a_running_mind_is_refused(service: ManagementService) -> None:
    with pytest.raises(WrongState) as refused:
        await service.compact_context("p_bob", actor="ops")
    assert str(refused.value) == COMPACT_OFFLINE
    assert await service.audit_entries() == []


async def test_identifying_a_token_says_whether_its_secret_is_the_credentials_and_writes_nothing(
    service: ManagementService, database: Database
) -> None:
    issued = await service.create_credential(
        kind="client", principal="alice", scopes=["chat"], actor="ops"
    )
    await service.revoke_credential(issued.credential.id, actor="ops")
    audit_rows = await count(database, ManagementAudit)

    info, matches = await service.identify_credential(issued.secret)
    assert (info.id, info.principal, matches) == (issued.credential.id, "alice", True)
    assert info.revoked_at is not None

    altered = issued.secret[:-1] + ("a" if issued.secret[-1] != "a" else "b")
    info, matches = await service.identify_credential(altered)
    assert (info.id, matches) == (issued.credential.id, False)

    with pytest.raises(NotFound, match="no credential of the data directory"):
        await service.identify_credential("tobe_0123456789abcdef_" + "x" * 43)
    with pytest.raises(InvalidInput, match="not a ToBe credential"):
        await service.identify_credential("<your token>")
    assert await count(database, ManagementAudit) == audit_rows
