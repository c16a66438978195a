"""The authorization hook between a tool call's admission and its execution.

The approvals component replaces `AllowAll` with a real Authorizer. An Authorizer that can
ask a person resolves `ask` itself (waits for the decision) before it returns; the runtime
treats an unresolved `ask` as a denial, so nothing runs without a yes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from mind.tools.base import ApprovalBinding, DetailMode, Effect


class VerdictKind(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


class Decision(StrEnum):
    """A committed decision on an approval request (values stored in `approvals.decision`)."""

    APPROVE_ONCE = "approve_once"
    APPROVE_CONVERSATION = "approve_conversation"
    DENY = "deny"
    # Nobody decided before `expires_at`: counts as a deny.
    EXPIRED = "expired"

    @property
    def approves(self) -> bool:
        return self in (Decision.APPROVE_ONCE, Decision.APPROVE_CONVERSATION)


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    reason: str = ""
    # Set when an approval covers the call: passed to the tool so a Hand can check the digest.
    approval: ApprovalBinding | None = None

    @classmethod
    def allow(cls, approval: ApprovalBinding | None = None) -> Verdict:
        return cls(VerdictKind.ALLOW, approval=approval)

    @classmethod
    def deny(cls, reason: str) -> Verdict:
        return cls(VerdictKind.DENY, reason)

    @classmethod
    def ask(cls, reason: str) -> Verdict:
        return cls(VerdictKind.ASK, reason)


@dataclass(frozen=True)
class CallUnderReview:
    """Everything an Authorizer may base its verdict on."""

    # The call's name (`CallClass.name`: the tool's, or the action's for a classifying tool).
    tool: str
    effect: Effect
    hand_id: str
    arguments: dict[str, Any]
    conversation_key: str
    run_id: str
    tool_call_id: str
    principal: str
    detail_mode: DetailMode
    # What a person reads when the call waits for approval (`mind.tools.decision`): shown in
    # every detail mode, never logged, never audited.
    decision_text: str
    # Permissions of the source that triggered the run (observation trust), if any.
    run_permissions: dict[str, bool] = field(default_factory=dict)
    # Trust of the observation that triggered the run ("low", "medium", ...); "" otherwise.
    run_trust: str = ""
    # What started the run, for the person deciding (`mind.conversation.origins`); "" for a
    # person's message.
    run_origin: str = ""
    # Other names approval rules may match the call by (`CallClass.aliases`).
    aliases: tuple[str, ...] = ()
    # The tool's JSON Schema (marks `x-sensitive` arguments).
    parameters: dict[str, Any] = field(default_factory=dict)


class Authorizer(Protocol):
    async def authorize(self, call: CallUnderReview) -> Verdict: ...

    def begin_shutdown(self) -> None:
        """The process is stopping: waits cancelled from now on leave their requests pending."""
        ...


class AllowAll:
    """Allows every call: the default until approvals are configured."""

    async def authorize(self, call: CallUnderReview) -> Verdict:
        return Verdict.allow()

    def begin_shutdown(self) -> None:
        """Nothing waits here, so nothing is left pending."""
