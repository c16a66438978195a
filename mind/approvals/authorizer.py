"""The Authorizer the tool runtime calls between admission and execution.

For each call:

1. the deterministic policy (`mind.approvals.policy`) gives allow, deny or ask;
   a call that needs a digest and has none is refused here (`mind.approvals.binding`);
2. on ask, a request already stored for this tool call (a run continued after a restart)
   decides alone;
3. else an earlier "approve for this conversation" grant for the same call name and Hand
   allows, unless an observation below high trust triggered the run;
4. else the isolated Reviewer (when configured) may allow; `require_user` goes on;
5. else the Broker persists a request and the call waits for a person's decision (or expiry).

Every verdict is audited with its source. An allowed call carries an `ApprovalBinding` naming
what allowed it (person, grant, policy rule, Reviewer) and the argument digest, so a Hand can
check it runs exactly the allowed arguments; only a read-only call the policy allows has none.
Contract: `authorize` never returns `ask`; it resolves it.
"""

from __future__ import annotations

import asyncio

from mind.approvals.audit import AuditSource, add_audit
from mind.approvals.binding import bindable_digest, needs_digest
from mind.approvals.broker import ApprovalBroker
from mind.approvals.errors import ArgumentsNotBindable
from mind.approvals.grants import GrantCache
from mind.approvals.model import ApprovalRecord
from mind.approvals.policy import Policy, grants_apply
from mind.approvals.reviewer import Reviewer, ReviewOutcome
from mind.approvals.summary import reviewer_summary
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.authorizer import CallUnderReview, Decision, Verdict, VerdictKind
from mind.tools.base import ApprovalBinding, ApprovalSource
from mind.tools.summary import summarize_arguments


def denial_reason(record: ApprovalRecord) -> str:
    """What the model reads when a person (or the clock) said no."""
    if record.decision is Decision.EXPIRED:
        return "the approval request expired without a decision"
    who = record.decided_by or "the system"
    text = f"denied by {who}"
    return f"{text}: {record.decision_reason}" if record.decision_reason else text


class ApprovalAuthorizer:
    """Policy → grant → Reviewer → Broker; see the module docstring."""

    def __init__(
        self,
        *,
        policy: Policy,
        broker: ApprovalBroker,
        grants: GrantCache,
        database: Database,
        reviewer: Reviewer | None = None,
    ) -> None:
        self._policy = policy
        self._broker = broker
        self._grants = grants
        self._database = database
        self._reviewer = reviewer
        self._shutting_down = False
        broker.add_listener(grants.on_decision)

    def begin_shutdown(self) -> None:
        self._shutting_down = True

    async def authorize(self, call: CallUnderReview) -> Verdict:
        summary = summarize_arguments(call.arguments)
        verdict = self._policy.evaluate(call)
        await self._audit(call, AuditSource.POLICY, verdict.kind.value, summary, verdict.rule)
        if verdict.kind is VerdictKind.DENY:
            return Verdict.deny(verdict.reason)
        digest = ""
        if needs_digest(call, verdict.kind):
            try:
                digest = bindable_digest(call)
            except ArgumentsNotBindable as exc:
                note = f"no RFC 8785 form at {exc.path}"
                await self._audit(call, AuditSource.ARGUMENTS, "deny", summary, note)
                return Verdict.deny(str(exc))
        if verdict.kind is VerdictKind.ALLOW:
            if not digest:  # a read-only call: nothing to bind
                return Verdict.allow()
            return Verdict.allow(ApprovalBinding(ApprovalSource.POLICY, digest, "", verdict.rule))
        if await self._broker.for_tool_call(call.tool_call_id) is not None:
            # Asked before (the run continues after a restart): only that request decides.
            return await self._ask_person(call, summary, verdict.reason, digest)
        granted = None
        if grants_apply(call.run_trust):
            granted = await self._grants.find(call.conversation_key, call.tool, call.hand_id)
        if granted is not None:
            await self._audit(
                call, AuditSource.GRANT, "allow", summary, "conversation grant", granted
            )
            grant = ApprovalBinding(ApprovalSource.GRANT, digest, granted, "conversation grant")
            return Verdict.allow(grant)
        if self._reviewer is not None:
            review = await self._reviewer.review(
                call, reviewer_summary(call.arguments, call.parameters)
            )
            await self._audit(
                call, AuditSource.REVIEWER, review.outcome.value, summary, review.note
            )
            if review.outcome is ReviewOutcome.ALLOW:
                reviewed = ApprovalBinding(ApprovalSource.REVIEWER, digest, "", review.note)
                return Verdict.allow(reviewed)
        return await self._ask_person(call, summary, verdict.reason, digest)

    async def _ask_person(
        self, call: CallUnderReview, summary: str, reason: str, digest: str
    ) -> Verdict:
        # The store commits the request even when the run is cancelled while it is written:
        # the request runs on as a task of its own, so that a cancel can still close it.
        requested = asyncio.ensure_future(
            self._broker.request(call, arguments_summary=summary, reason=reason)
        )
        try:
            record = await asyncio.shield(requested)
            if not _covers(record, call, digest):
                # Only possible when a stored request is met again for another call.
                return Verdict.deny("the approval on record covers a different call")
            decided = await self._broker.wait(record.id)
        except asyncio.CancelledError:
            # A stop leaves the request pending: it is decided after the restart and the call
            # continues then. Any other cancel ends the run, and the request with it.
            if not self._shutting_down:
                await asyncio.shield(self._close_request(requested, call, digest))
            raise
        return verdict_for(decided)

    async def _close_request(
        self, requested: asyncio.Future[ApprovalRecord], call: CallUnderReview, digest: str
    ) -> None:
        try:
            record = await requested
        except Exception:  # the request failed: there is nothing to close
            return
        if _covers(record, call, digest):
            await self._broker.close_for_ended_run(record.id, "the run ended while waiting")

    async def _audit(
        self,
        call: CallUnderReview,
        source: AuditSource,
        verdict: str,
        summary: str,
        note: str,
        approval_id: str | None = None,
    ) -> None:
        text = _audit_summary(call, summary, note)

        def unit(tx: WriteTx) -> None:
            add_audit(
                tx,
                conversation_key=call.conversation_key,
                tool_call_id=call.tool_call_id,
                tool=call.tool,
                source=source,
                verdict=verdict,
                principal=call.principal,
                summary=text,
                approval_id=approval_id,
            )

        await self._database.write(unit)


def verdict_for(record: ApprovalRecord) -> Verdict:
    """The runtime verdict of a decided approval."""
    if record.decision is not None and record.decision.approves:
        person = ApprovalBinding(
            ApprovalSource.PERSON, record.arguments_digest, record.id, record.decided_by or ""
        )
        return Verdict.allow(person)
    return Verdict.deny(denial_reason(record))


def _covers(record: ApprovalRecord, call: CallUnderReview, digest: str) -> bool:
    return record.tool == call.tool and record.arguments_digest == digest


def _audit_summary(call: CallUnderReview, summary: str, note: str) -> str:
    text = f"{call.tool} ({call.effect.value}) on {call.hand_id or 'mind'}: {summary}"
    return f"{text} [{note}]" if note else text
