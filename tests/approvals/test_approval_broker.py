"""The Approval Broker against a real store (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from approval_calls import MEMBER, OWNER, STRANGER, make_call
from sqlalchemy import func, select

from mind.approvals.broker import ApprovalBroker
from mind.approvals.errors import ApprovalAlreadyDecided, ApprovalNotFound, InvalidDecision
from mind.approvals.grants import GrantCache
from mind.approvals.model import ApprovalRecord
from mind.store.database import Database
from mind.store.models import Approval, ApprovalAudit, ApprovalGrant, OutboxEvent
from mind.tools.authorizer import Decision
from mind.tools.base import DetailMode
from tobe.runtime.digest import arguments_digest


@pytest.fixture
async def broker(database: Database, conversation: str) -> AsyncIterator[ApprovalBroker]:
    broker = ApprovalBroker(database, expiry=600)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.aclose()


async def count(database: Database, model: type, *where: object) -> int:
    query = select(func.count()).select_from(model).where(*where)
    return await database.read(lambda session: session.scalar(query)) or 0


async def approval_events(database: Database) -> list[dict[str, object]]:
    query = (
        select(OutboxEvent).where(OutboxEvent.type == "approval_changed").order_by(OutboxEvent.id)
    )
    return await database.read(
        lambda session: [dict(row.payload, audience=row.audience) for row in session.scalars(query)]
    )


async def test_request_is_persisted_with_its_durable_event(
    broker: ApprovalBroker, database: Database
) -> None:
    call = make_call()
    record = await broker.request(call, arguments_summary="path=<9 chars>", reason="asks")
    assert record.pending
    assert record.arguments_digest == arguments_digest(call.arguments)
    row = await database.read(lambda session: session.get(Approval, record.id))
    assert row is not None and row.decision is None and row.tool_call_id == call.tool_call_id
    [event] = await approval_events(database)
    assert event["id"] == record.id and event["decision"] == ""
    assert event["audience"] == [OWNER, MEMBER]
    # Summary-mode calls never put raw arguments in the event.
    assert event["arguments_json"] == ""


async def test_transparent_request_event_carries_the_arguments(
    broker: ApprovalBroker, database: Database
) -> None:
    await broker.request(
        make_call(detail_mode=DetailMode.TRANSPARENT), arguments_summary="s", reason="r"
    )
    [event] = await approval_events(database)
    assert event["arguments_json"] == '{"path":"notes.txt","text":"hello"}'


async def test_asking_again_for_the_same_tool_call_returns_the_stored_request(
    broker: ApprovalBroker, database: Database
) -> None:
    first = await broker.request(make_call(), arguments_summary="s", reason="r")
    second = await broker.request(make_call(), arguments_summary="s", reason="r")
    assert second.id == first.id
    assert await count(database, Approval) == 1
    assert len(await approval_events(database)) == 1


async def test_decision_is_committed_before_the_waiter_wakes(
    broker: ApprovalBroker, database: Database
) -> None:
    record = await broker.request(make_call(), arguments_summary="s", reason="r")
    seen_in_store: list[str | None] = []

    async def waiter() -> ApprovalRecord:
        decided = await broker.wait(record.id)
        row = await database.read(lambda session: session.get(Approval, record.id))
        seen_in_store.append(row.decision if row else None)
        return decided

    task = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    await broker.decide(record.id, Decision.APPROVE_ONCE, principal=MEMBER)
    decided = await task
    assert decided.decision is Decision.APPROVE_ONCE and decided.decided_by == MEMBER
    assert seen_in_store == ["approve_once"]


async def test_second_decision_is_refused(broker: ApprovalBroker, database: Database) -> None:
    record = await broker.request(make_call(), arguments_summary="s", reason="r")
    await broker.decide(record.id, Decision.DENY, principal=OWNER, reason="not now")
    with pytest.raises(ApprovalAlreadyDecided):
        await broker.decide(record.id, Decision.APPROVE_ONCE, principal=MEMBER)
    stored = await broker.get(record.id)
    assert stored is not None and stored.decision is Decision.DENY
    assert stored.decision_reason == "not now"
    assert await count(database, ApprovalAudit, ApprovalAudit.source == "user") == 1


async def test_two_deciders_at_the_same_moment_record_exactly_one_decision(
    broker: ApprovalBroker, database: Database, store_url: str
) -> None:
    """Two clients race through two separate writers of the store (two `Database`s)."""
    other_database = Database.open(store_url)
    other = ApprovalBroker(other_database, expiry=600)
    try:
        for attempt in range(5):
            record = await broker.request(
                make_call(tool_call_id=f"call_race_{attempt}"), arguments_summary="s", reason="r"
            )
            waiting = asyncio.create_task(broker.wait(record.id))
            await asyncio.sleep(0)
            results = await asyncio.gather(
                broker.decide(record.id, Decision.APPROVE_ONCE, principal=OWNER),
                other.decide(record.id, Decision.DENY, principal=MEMBER),
                return_exceptions=True,
            )
            winners = [r for r in results if isinstance(r, ApprovalRecord)]
            losers = [r for r in results if isinstance(r, ApprovalAlreadyDecided)]
            assert len(winners) == 1 and len(losers) == 1, results
            stored = await broker.get(record.id)
            assert stored is not None and stored.decision is winners[0].decision
            user_audits = await count(
                database,
                ApprovalAudit,
                ApprovalAudit.approval_id == record.id,
                ApprovalAudit.source == "user",
            )
            assert user_audits == 1
            if winners[0].decided_by == OWNER:
                # The waiter in this process is woken with the one recorded decision.
                assert (await waiting).decision is stored.decision
            else:
                waiting.cancel()
    finally:
        await other_database.close()


async def test_concurrent_deciders_in_one_process_record_exactly_one_decision(
    broker: ApprovalBroker, database: Database
) -> None:
    record = await broker.request(make_call(), arguments_summary="s", reason="r")
    waiting = asyncio.create_task(broker.wait(record.id))
    await asyncio.sleep(0)
    decisions = [Decision.APPROVE_ONCE, Decision.DENY, Decision.APPROVE_CONVERSATION]
    results = await asyncio.gather(
        *(broker.decide(record.id, d, principal=OWNER) for d in decisions),
        return_exceptions=True,
    )
    winners = [r for r in results if isinstance(r, ApprovalRecord)]
    assert len(winners) == 1
    assert sum(isinstance(r, ApprovalAlreadyDecided) for r in results) == 2
    assert (await waiting).decision is winners[0].decision
    assert len(await approval_events(database)) == 2


async def test_decision_committed_after_its_decider_was_cancelled_still_wakes_the_waiter(
    broker: ApprovalBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store commits a decision whose caller went away meanwhile; the waiter must hear it."""
    record = await broker.request(make_call(), arguments_summary="s", reason="r")
    looked_up = asyncio.Event()
    get = broker.get

    async def noted_get(approval_id: str) -> ApprovalRecord | None:
        found = await get(approval_id)
        looked_up.set()
        return found

    monkeypatch.setattr(broker, "get", noted_get)
    waiting = asyncio.create_task(broker.wait(record.id))
    await looked_up.wait()  # the waiter saw the request pending: only a wake-up ends its wait
    deciding = asyncio.create_task(broker.decide(record.id, Decision.APPROVE_ONCE, principal=OWNER))
    await asyncio.sleep(0)
    deciding.cancel()
    decided = await asyncio.wait_for(waiting, 30)
    assert decided.decision is Decision.APPROVE_ONCE


async def test_stranger_cannot_see_or_decide(broker: ApprovalBroker) -> None:
    record = await broker.request(make_call(), arguments_summary="s", reason="r")
    with pytest.raises(ApprovalNotFound):
        await broker.decide(record.id, Decision.APPROVE_ONCE, principal=STRANGER)
    with pytest.raises(ApprovalNotFound):
        await broker.decide("ap_missing", Decision.APPROVE_ONCE, principal=OWNER)
    assert (await broker.get(record.id)).pending  # type: ignore[union-attr]


async def test_a_person_cannot_decide_expired(broker: ApprovalBroker) -> None:
    record = await broker.request(make_call(), arguments_summary="s", reason="r")
    with pytest.raises(InvalidDecision):
        await broker.decide(record.id, Decision.EXPIRED, principal=OWNER)


async def test_request_expires_as_denied_without_any_client(
    database: Database, conversation: str
) -> None:
    broker = ApprovalBroker(database, expiry=0.2)
    await broker.start()
    try:
        record = await broker.request(make_call(), arguments_summary="s", reason="r")
        decided = await asyncio.wait_for(broker.wait(record.id), 30)
    finally:
        await broker.aclose()
    assert decided.decision is Decision.EXPIRED and not decided.decision.approves
    assert await count(database, ApprovalAudit, ApprovalAudit.source == "expiry") == 1
    with pytest.raises(ApprovalAlreadyDecided):
        await broker.decide(record.id, Decision.APPROVE_ONCE, principal=OWNER)


async def test_pending_request_survives_a_restart_and_is_still_decidable(
    database: Database, store_url: str, conversation: str
) -> None:
    first = ApprovalBroker(database, expiry=600)
    await first.start()
    record = await first.request(make_call(), arguments_summary="s", reason="r")
    await first.aclose()

    restarted_database = Database.open(store_url)
    restarted = ApprovalBroker(restarted_database, expiry=600)
    unattended: list[ApprovalRecord] = []

    async def remember(decided: ApprovalRecord) -> None:
        unattended.append(decided)

    restarted.on_unattended(remember)
    await restarted.start()
    try:
        assert [p.id for p in await restarted.pending()] == [record.id]
        await restarted.decide(record.id, Decision.APPROVE_ONCE, principal=OWNER)
    finally:
        await restarted.aclose()
        await restarted_database.close()
    assert [(r.id, r.decision) for r in unattended] == [(record.id, Decision.APPROVE_ONCE)]


async def test_expiry_is_rescheduled_after_a_restart(database: Database, conversation: str) -> None:
    first = ApprovalBroker(database, expiry=0.3)
    record = await first.request(make_call(), arguments_summary="s", reason="r")
    # Never started: no expiry ran in the "old process".
    restarted = ApprovalBroker(database, expiry=600)
    await restarted.start()
    try:
        decided = await asyncio.wait_for(restarted.wait(record.id), 30)
    finally:
        await restarted.aclose()
    assert decided.decision is Decision.EXPIRED


async def test_approve_for_conversation_is_persisted_as_a_grant(
    broker: ApprovalBroker, database: Database
) -> None:
    grants = GrantCache(database)
    broker.add_listener(grants.on_decision)
    record = await broker.request(make_call(), arguments_summary="s", reason="r")
    assert await grants.find(record.conversation_key, "write_note", "laptop") is None
    await broker.decide(record.id, Decision.APPROVE_CONVERSATION, principal=OWNER)
    assert await grants.find(record.conversation_key, "write_note", "laptop") == record.id
    assert await grants.find(record.conversation_key, "write_note", "server") is None
    # A fresh cache (as after a restart) loads it from the store.
    assert await GrantCache(database).find(record.conversation_key, "write_note", "laptop") == (
        record.id
    )
    second = await broker.request(
        make_call(tool_call_id="call_2"), arguments_summary="s", reason="r"
    )
    await broker.decide(second.id, Decision.APPROVE_CONVERSATION, principal=OWNER)
    assert await count(database, ApprovalGrant) == 1
