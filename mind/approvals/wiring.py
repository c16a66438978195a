"""The approval components of one Mind process, built from `[approvals]` and wired together."""

from __future__ import annotations

from dataclasses import dataclass

from mind.approvals.authorizer import ApprovalAuthorizer
from mind.approvals.broker import ApprovalBroker
from mind.approvals.continuation import Continuation, Resume
from mind.approvals.grants import GrantCache
from mind.approvals.model import ApprovalRecord
from mind.approvals.policy import Policy
from mind.approvals.reviewer import Reviewer
from mind.providers.base import Provider
from mind.sealing.keyring import KeyRing
from mind.store.database import Database
from mind.tools.authorizer import Decision
from tobe.config import ApprovalSettings


@dataclass
class Approvals:
    broker: ApprovalBroker
    authorizer: ApprovalAuthorizer
    continuation: Continuation
    # A reviewer provider of its own (closed at stop); None when it shares the Mind's.
    own_provider: Provider | None = None

    @classmethod
    def build(
        cls,
        settings: ApprovalSettings,
        database: Database,
        provider: Provider,
        keyring: KeyRing | None = None,
        reviewer_provider: Provider | None = None,
    ) -> Approvals:
        """`provider` serves the Reviewer unless `reviewer_provider` is given: the one
        `[approvals.reviewer] provider` names, built by the caller like the Mind's (closed
        here at stop); `keyring` holds the sealed runs' keys (`mind.sealing`)."""
        broker = ApprovalBroker(database, expiry=settings.expiry, keyring=keyring)
        continuation = Continuation(database)
        broker.on_unattended(continuation.on_decision)
        reviewer, own = None, None
        if settings.reviewer.enabled:
            own = reviewer_provider
            reviewer = Reviewer(own or provider, timeout=settings.reviewer.timeout)
        authorizer = ApprovalAuthorizer(
            policy=Policy(settings),
            broker=broker,
            grants=GrantCache(database),
            database=database,
            reviewer=reviewer,
        )
        return cls(broker, authorizer, continuation, own)

    async def start(self, resume: Resume) -> None:
        """Start expiry, then continue interrupted runs whose approval is already decided."""
        await self.broker.start()
        await self.continuation.start(resume)

    async def close(self) -> None:
        await self.broker.aclose()
        if self.own_provider is not None:
            await self.own_provider.aclose()

    async def decide(
        self, approval_id: str, decision: Decision, *, principal: str, reason: str, admin: bool
    ) -> ApprovalRecord:
        return await self.broker.decide(
            approval_id, decision, principal=principal, reason=reason, sees_all=admin
        )

    async def conversation_of(self, approval_id: str) -> str:
        """The conversation an approval request belongs to ("" when there is none): a
        decision is served by that conversation's owner (`mind.api.forwarding`)."""
        record = await self.broker.get(approval_id)
        return record.conversation_key if record is not None else ""
