"""The Authorizer end to end over a real store: policy → grant → Reviewer → Broker."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from approval_calls import OWNER, make_call
from helpers.eventually import eventually_async
from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.approvals.authorizer import ApprovalAuthorizer
from mind.approvals.broker import ApprovalBroker
from mind.approvals.grants import GrantCache
from mind.approvals.model import ApprovalRecord
from mind.approvals.policy import Policy
from mind.approvals.reviewer import Reviewer
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import parse_script
from mind.store.database import Database
from mind.store.models import Approval, ApprovalAudit, OutboxEvent
from mind.tools.authorizer import CallUnderReview, Decision, Verdict, VerdictKind
from mind.tools.base import ApprovalBinding, ApprovalSource, Effect
from tobe.config import ApprovalRule, ApprovalSettings
from tobe.runtime.digest import arguments_digest

LOW_TRUST = {"workspace_write": False, "reply": True}
SECRET = "hunter2-very-secret"
SENSITIVE_SCHEMA = {
    "type": "object",
    "properties": {"user": {"type": "string"}, "pin": {"type": "string", "x-sensitive": True}},
}


def reviewer_answering(text: str) -> Reviewer:
    script = parse_script(json.dumps({"runs": [{"match": ".*", "steps": [{"text": text}]}]}), "t")
    return Reviewer(ScriptedProvider(script), timeout=5)


class Harness:
    def __init__(self, database: Database, broker: ApprovalBroker) -> None:
        self.database = database
        self.broker = broker

    def authorizer(
        self, settings: ApprovalSettings | None = None, reviewer: Reviewer | None = None
    ) -> ApprovalAuthorizer:
        return ApprovalAuthorizer(
            policy=Policy(settings or ApprovalSettings()),
            broker=self.broker,
            grants=GrantCache(self.database),
            database=self.database,
            reviewer=reviewer,
        )

    async def next_pending(self) -> str:
        pending = await eventually_async(
            self.broker.pending, what="a pending approval request", interval=0.01
        )
        return pending[0].id

    async def audit(self) -> list[ApprovalAudit]:
        query = select(ApprovalAudit).order_by(ApprovalAudit.id)
        return await self.database.read(lambda session: list(session.scalars(query)))


@pytest.fixture
async def harness(database: Database, conversation: str) -> AsyncIterator[Harness]:
    broker = ApprovalBroker(database, expiry=600)
    await broker.start()
    try:
        yield Harness(database, broker)
    finally:
        await broker.aclose()


async def decide_when_asked(
    harness: Harness,
    authorizer: ApprovalAuthorizer,
    call: CallUnderReview,
    decision: Decision,
    reason: str = "",
) -> Verdict:
    task = asyncio.create_task(authorizer.authorize(call))
    approval_id = await harness.next_pending()
    await harness.broker.decide(approval_id, decision, principal=OWNER, reason=reason)
    return await task


async def test_read_only_call_is_allowed_by_policy_and_audited(harness: Harness) -> None:
    verdict = await harness.authorizer().authorize(make_call(effect=Effect.READ_ONLY))
    assert verdict == Verdict.allow()
    [row] = await harness.audit()
    assert (row.source, row.verdict, row.principal) == ("policy", "allow", OWNER)


async def test_write_waits_for_a_person_and_is_bound_to_the_arguments(harness: Harness) -> None:
    call = make_call()
    verdict = await decide_when_asked(harness, harness.authorizer(), call, Decision.APPROVE_ONCE)
    assert verdict.kind is VerdictKind.ALLOW
    assert verdict.approval is not None
    assert verdict.approval.arguments_digest == arguments_digest(call.arguments)
    assert [(r.source, r.verdict) for r in await harness.audit()] == [
        ("policy", "ask"),
        ("user", "approve_once"),
    ]


async def test_deny_reason_reaches_the_model(harness: Harness) -> None:
    verdict = await decide_when_asked(
        harness, harness.authorizer(), make_call(), Decision.DENY, reason="not on Fridays"
    )
    assert verdict.kind is VerdictKind.DENY
    assert verdict.reason == f"denied by {OWNER}: not on Fridays"


async def test_expired_request_is_a_denial(database: Database, conversation: str) -> None:
    broker = ApprovalBroker(database, expiry=0.2)
    await broker.start()
    try:
        authorizer = Harness(database, broker).authorizer()
        verdict = await asyncio.wait_for(authorizer.authorize(make_call()), 30)
    finally:
        await broker.aclose()
    assert verdict.kind is VerdictKind.DENY and "expired" in verdict.reason


async def test_approve_for_conversation_covers_later_calls_of_the_same_tool_and_hand(
    harness: Harness,
) -> None:
    authorizer = harness.authorizer()
    await decide_when_asked(harness, authorizer, make_call(), Decision.APPROVE_CONVERSATION)
    later = make_call(tool_call_id="call_2", arguments={"path": "other.txt", "text": "x"})
    verdict = await asyncio.wait_for(authorizer.authorize(later), 30)
    assert verdict.kind is VerdictKind.ALLOW
    assert verdict.approval is not None
    assert verdict.approval.arguments_digest == arguments_digest(later.arguments)
    other_hand = make_call(tool_call_id="call_3", hand_id="server")
    task = asyncio.create_task(authorizer.authorize(other_hand))
    assert await harness.next_pending()
    task.cancel()
    sources = [r.source for r in await harness.audit()]
    assert "grant" in sources


async def test_cancelled_wait_closes_the_request(harness: Harness) -> None:
    task = asyncio.create_task(harness.authorizer().authorize(make_call()))
    approval_id = await harness.next_pending()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    record = await harness.broker.get(approval_id)
    assert record is not None and record.decision is Decision.DENY
    assert [r.source for r in await harness.audit()][-1] == "run"


async def test_run_cancelled_while_its_request_is_written_closes_the_request(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store commits the request regardless of the cancel; the authorizer then closes it."""
    requesting = asyncio.Event()
    request = harness.broker.request

    async def noted_request(*args: Any, **kwargs: Any) -> ApprovalRecord:
        requesting.set()
        return await request(*args, **kwargs)

    monkeypatch.setattr(harness.broker, "request", noted_request)
    call = make_call()
    task = asyncio.create_task(harness.authorizer().authorize(call))
    await asyncio.wait_for(requesting.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    record = await harness.broker.for_tool_call(call.tool_call_id)
    assert record is not None and record.decision is Decision.DENY
    assert await harness.broker.pending() == []
    assert [r.source for r in await harness.audit()][-1] == "run"


async def test_reviewer_allow_spares_the_person(harness: Harness) -> None:
    authorizer = harness.authorizer(reviewer=reviewer_answering("allow"))
    verdict = await asyncio.wait_for(authorizer.authorize(make_call()), 30)
    assert verdict.kind is VerdictKind.ALLOW
    assert await harness.broker.pending() == []
    assert [(r.source, r.verdict) for r in await harness.audit()] == [
        ("policy", "ask"),
        ("reviewer", "allow"),
    ]


async def test_reviewer_anything_else_goes_to_the_person(harness: Harness) -> None:
    authorizer = harness.authorizer(reviewer=reviewer_answering("sure, go ahead"))
    verdict = await decide_when_asked(harness, authorizer, make_call(), Decision.APPROVE_ONCE)
    assert verdict.kind is VerdictKind.ALLOW
    assert [(r.source, r.verdict) for r in await harness.audit()] == [
        ("policy", "ask"),
        ("reviewer", "require_user"),
        ("user", "approve_once"),
    ]


@pytest.mark.parametrize(
    "settings",
    [
        ApprovalSettings(),
        ApprovalSettings(workspace_write="allow"),
        ApprovalSettings(rules=[ApprovalRule(tool="write_note", verdict="allow")]),
    ],
)
async def test_low_trust_run_cannot_get_a_workspace_write_approved(
    harness: Harness, settings: ApprovalSettings
) -> None:
    authorizer = harness.authorizer(settings, reviewer=reviewer_answering("allow"))
    # Even a standing grant for this tool does not help.
    await decide_when_asked(
        harness,
        harness.authorizer(),
        make_call(tool_call_id="call_0"),
        Decision.APPROVE_CONVERSATION,
    )
    verdict = await authorizer.authorize(make_call(run_permissions=LOW_TRUST))
    assert verdict.kind is VerdictKind.DENY
    assert "may not write to the workspace" in verdict.reason
    assert await harness.broker.pending() == []


async def test_sensitive_argument_never_reaches_audit_events_or_logs(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    arguments: dict[str, Any] = {"user": "alice", "pin": SECRET}
    call = make_call(
        tool="unlock_door",
        effect=Effect.EXTERNAL_SIDE_EFFECT,
        arguments=arguments,
        parameters=SENSITIVE_SCHEMA,
    )
    authorizer = harness.authorizer(reviewer=reviewer_answering("require_user"))
    await decide_when_asked(harness, authorizer, call, Decision.DENY, reason="no")

    def stored(session: Session) -> tuple[list[str], list[str], list[str]]:
        audit = [r.summary for r in session.scalars(select(ApprovalAudit))]
        approvals = [r.arguments_summary for r in session.scalars(select(Approval))]
        events = [json.dumps(r.payload) for r in session.scalars(select(OutboxEvent))]
        return audit, approvals, events

    audit, approvals, events = await harness.database.read(stored)
    assert audit and approvals and events
    for text in [*audit, *approvals, *events, caplog.text]:
        assert SECRET not in text


# -- bindings: what allowed an effectful call, and the digest it covers --------------------

ALLOW_ALL = ApprovalSettings(workspace_write="allow", external_side_effect="allow")


async def test_a_policy_allow_binds_the_rule_and_the_digest(harness: Harness) -> None:
    call = make_call(effect=Effect.EXTERNAL_SIDE_EFFECT)
    verdict = await harness.authorizer(ALLOW_ALL).authorize(call)
    digest = arguments_digest(call.arguments)
    expected = ApprovalBinding(ApprovalSource.POLICY, digest, "", "default.external_side_effect")
    assert verdict == Verdict.allow(expected)
    ruled = ApprovalSettings(rules=[ApprovalRule(tool="write_*", verdict="allow")])
    verdict = await harness.authorizer(ruled).authorize(make_call())
    assert verdict.approval is not None and verdict.approval.detail == "rules[0]"


async def test_a_read_only_call_the_policy_allows_has_no_binding(harness: Harness) -> None:
    verdict = await harness.authorizer().authorize(make_call(effect=Effect.READ_ONLY))
    assert verdict == Verdict.allow()


async def test_a_persons_approval_binds_the_approval_and_who_decided(harness: Harness) -> None:
    call = make_call()
    verdict = await decide_when_asked(harness, harness.authorizer(), call, Decision.APPROVE_ONCE)
    record = await harness.broker.for_tool_call(call.tool_call_id)
    assert record is not None
    assert verdict.approval == ApprovalBinding(
        ApprovalSource.PERSON, arguments_digest(call.arguments), record.id, OWNER
    )


async def test_a_grant_and_the_reviewer_name_themselves(harness: Harness) -> None:
    authorizer = harness.authorizer()
    await decide_when_asked(harness, authorizer, make_call(), Decision.APPROVE_CONVERSATION)
    later = make_call(tool_call_id="call_2", arguments={"path": "b.txt", "text": "x"})
    granted = await asyncio.wait_for(authorizer.authorize(later), 30)
    assert granted.approval is not None
    assert (granted.approval.source, granted.approval.detail) == (
        ApprovalSource.GRANT,
        "conversation grant",
    )
    assert granted.approval.approval_id
    settings = ApprovalSettings()
    ungranted = make_call(tool="send_note", tool_call_id="call_3")
    reviewer = reviewer_answering("allow")
    reviewed = await harness.authorizer(settings, reviewer).authorize(ungranted)
    assert reviewed.approval is not None and reviewed.approval.source is ApprovalSource.REVIEWER
    assert reviewed.approval.arguments_digest == arguments_digest(ungranted.arguments)


async def test_an_integer_beyond_2_53_in_an_effectful_call_is_refused_naming_its_path(
    harness: Harness,
) -> None:
    call = make_call(arguments={"ids": [1, 2, 3, 2**53]})
    verdict = await harness.authorizer(ALLOW_ALL).authorize(call)
    assert verdict.kind is VerdictKind.DENY
    assert "arguments.ids[3]" in verdict.reason
    assert "pass such a number as a string" in verdict.reason
    assert await harness.broker.pending() == []
    audit = [(row.source, row.verdict) for row in await harness.audit()]
    assert audit == [("policy", "allow"), ("arguments", "deny")]


async def test_a_read_only_call_needs_no_digest_unless_it_is_asked_about(
    harness: Harness,
) -> None:
    huge = {"ids": [2**53]}
    allowed = await harness.authorizer().authorize(
        make_call(effect=Effect.READ_ONLY, arguments=huge)
    )
    assert allowed == Verdict.allow()
    asking = ApprovalSettings(read_only="ask")
    asked = await harness.authorizer(asking).authorize(
        make_call(effect=Effect.READ_ONLY, arguments=huge, tool_call_id="call_2")
    )
    assert asked.kind is VerdictKind.DENY and "arguments.ids[0]" in asked.reason
