"""Operator view of approval requests: every conversation's, each with its decision text."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.approvals.broker import to_record
from mind.approvals.model import ApprovalRecord
from mind.errors import NotFound
from mind.store.models import Approval

DEFAULT_LIMIT = 100


def list_approvals(
    session: Session,
    *,
    pending_only: bool = False,
    conversation_key: str = "",
    limit: int = 0,
) -> list[ApprovalRecord]:
    """Newest first; only undecided ones when `pending_only`, one conversation's when keyed."""
    query = select(Approval)
    if pending_only:
        query = query.where(Approval.decision.is_(None))
    if conversation_key:
        query = query.where(Approval.conversation_key == conversation_key)
    query = query.order_by(Approval.requested_at.desc(), Approval.id).limit(limit or DEFAULT_LIMIT)
    return [to_record(row) for row in session.scalars(query)]


def get_approval(session: Session, approval_id: str) -> ApprovalRecord:
    row = session.get(Approval, approval_id)
    if row is None:
        raise NotFound(
            f"no approval with id {approval_id!r}; `tobe admin approvals list` shows the ids"
        )
    return to_record(row)
