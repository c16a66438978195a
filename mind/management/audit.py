"""The management audit trail: one secret-free row per operator mutation.

Rows are written in the mutation's own transaction (the caller commits both or neither).
String values pass through the credential redactor on the way in, so even an operator-typed
label that looks like a token never lands in the audit table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.management.records import AuditRecord
from mind.store.models import ManagementAudit
from tobe.runtime.redact import redact

DEFAULT_LIMIT = 100


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _scrub(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(item) for item in value]
    return value


def record(
    session: Session, *, action: str, actor: str, target: str, details: dict[str, Any]
) -> None:
    """Add an audit row to the caller's transaction and flush it (so a refusal surfaces here)."""
    session.add(ManagementAudit(action=action, actor=actor, target=target, details=_scrub(details)))
    session.flush()


def entries(
    session: Session,
    *,
    action: str = "",
    target: str = "",
    actor: str = "",
    since: datetime | None = None,
    limit: int = 0,
) -> list[AuditRecord]:
    """Newest first. `action` ending in "." matches every action with that prefix."""
    query = select(ManagementAudit)
    if action.endswith("."):
        query = query.where(ManagementAudit.action.startswith(action, autoescape=True))
    elif action:
        query = query.where(ManagementAudit.action == action)
    if target:
        query = query.where(ManagementAudit.target == target)
    if actor:
        query = query.where(ManagementAudit.actor == actor)
    if since is not None:
        query = query.where(ManagementAudit.time >= since)
    query = query.order_by(ManagementAudit.id.desc()).limit(limit or DEFAULT_LIMIT)
    rows = session.scalars(query)
    return [
        AuditRecord(
            id=row.id,
            time=row.time,
            action=row.action,
            actor=row.actor,
            target=row.target,
            details=dict(row.details or {}),
        )
        for row in rows
    ]
