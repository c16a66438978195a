"""Domain values of the approval path: policy verdicts, decisions and approval records.

The call under review is `mind.tools.authorizer.CallUnderReview`, shared with the tool runtime.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from mind.tools.authorizer import Decision, VerdictKind
from mind.tools.base import Effect


@dataclass(frozen=True)
class PolicyVerdict:
    kind: VerdictKind
    reason: str
    # Which rule decided ("rules[2]", "default.workspace_write", "trust"), for the audit.
    rule: str


@dataclass(frozen=True)
class ApprovalRecord:
    """An approval request and, once decided, its decision."""

    id: str
    conversation_key: str
    run_id: str
    tool_call_id: str
    tool: str
    effect: Effect
    hand_id: str
    arguments_summary: str
    arguments_digest: str
    reason: str
    requested_at: datetime
    expires_at: datetime
    # What the person decides on (`mind.tools.decision`); never in logs or audit rows.
    decision_text: str = ""
    # What started the run that made the call (`runs.origin`); "" for a person's message.
    origin: str = ""
    decision: Decision | None = None
    decided_by: str = ""
    decision_reason: str = ""
    decided_at: datetime | None = None

    @property
    def pending(self) -> bool:
        return self.decision is None
