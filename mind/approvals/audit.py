"""The approval audit: one row per verdict, with summaries only (never raw arguments)."""

from __future__ import annotations

from enum import StrEnum

from mind.store.models import ApprovalAudit
from mind.store.write_tx import WriteTx


class AuditSource(StrEnum):
    POLICY = "policy"
    REVIEWER = "reviewer"
    USER = "user"
    EXPIRY = "expiry"
    # An earlier "approve for this conversation" covered the call.
    GRANT = "grant"
    # The run waiting for the decision ended first (cancelled).
    RUN = "run"
    # The arguments have no canonical form, so nothing could be bound to them (refused).
    ARGUMENTS = "arguments"


def add_audit(
    tx: WriteTx,
    *,
    conversation_key: str,
    tool_call_id: str,
    tool: str,
    source: AuditSource,
    verdict: str,
    summary: str,
    principal: str = "",
    approval_id: str | None = None,
) -> None:
    """Add an audit row to the caller's transaction; `summary` must already be safe."""
    tx.insert_values(
        ApprovalAudit,
        {
            "approval_id": approval_id,
            "conversation_key": conversation_key,
            "tool_call_id": tool_call_id,
            "tool": tool,
            "source": source.value,
            "verdict": verdict,
            "principal": principal,
            "summary": summary,
        },
    )
