"""The durable event outbox: events committed with the state change they describe.

Ordering guarantee: no event becomes visible with an id lower than one a reader has already
seen, so "resume after event id N" never skips an event.

* PostgreSQL hands out sequence values before commit: writer A takes id 5, writer B takes id 6
  and commits first, a reader sees 6, then A commits 5 behind the reader's back. So
  each writer takes a transaction-scoped advisory lock (`WRITER_LOCK`) right before its insert
  and holds it
  to commit: the next writer draws its id only after the previous one committed (visibility
  precedes the lock's release at commit). Writers of the outbox therefore serialise; keep
  their transactions short after appending.
* SQLite allows one writer at a time and holds that write lock from the first write to commit,
  so ids are drawn in commit order already. The store has a single writer thread besides
  (`mind.store.database`), whose transactions begin IMMEDIATE, so writers never interleave.
  The table uses AUTOINCREMENT, so an id is never handed out twice, even after pruning.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, String, bindparam, delete, func, select
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

from mind.store.models import OutboxEvent, utcnow

# Arbitrary application-wide key of the advisory lock serialising outbox writers ("tobe" in hex).
OUTBOX_LOCK_KEY = 0x746F6265

# Taken by each outbox writer right before its insert, on PostgreSQL (see above).
WRITER_LOCK = select(func.pg_advisory_xact_lock(OUTBOX_LOCK_KEY))


# Where a commit that appended events tells the other Minds sharing the database, with its
# node id as the payload (`mind.cluster.membership` listens); delivered at commit, once.
NOTIFY_CHANNEL = "tobe_outbox"
NOTIFY = select(func.pg_notify(NOTIFY_CHANNEL, bindparam("node", type_=String)))


def needs_writer_lock(dialect: Dialect) -> bool:
    return dialect.name == "postgresql"


def new_event(
    type: str, conversation_key: str, audience: list[str], payload: dict[str, Any]
) -> OutboxEvent:
    """An event to insert in the caller's transaction (after `WRITER_LOCK`); it becomes
    visible when the caller commits. Insert it after the state change's other writes and
    commit soon: the outbox lock is held until commit."""
    return OutboxEvent(
        type=type,
        conversation_key=conversation_key,
        audience=list(audience),
        payload=payload,
        created_at=utcnow(),
    )


def read_events(session: Session, after_id: int, limit: int) -> list[OutboxEvent]:
    """Committed events with id > `after_id`, oldest first, at most `limit`."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    rows = session.scalars(
        select(OutboxEvent).where(OutboxEvent.id > after_id).order_by(OutboxEvent.id).limit(limit)
    )
    return list(rows)


def read_event_rows(session: Session, after_id: int, limit: int) -> list[Any]:
    """`read_events` as plain rows of `id`, `type`, `conversation_key` and `payload`: cheaper
    than ORM objects for a reader that reads hundreds and changes none."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    event = OutboxEvent
    rows = session.execute(
        select(event.id, event.type, event.conversation_key, event.payload)
        .where(event.id > after_id)
        .order_by(event.id)
        .limit(limit)
    )
    return list(rows)


def head_event_id(session: Session) -> int:
    """The highest event id stored; 0 when the outbox is empty."""
    return (session.scalar(select(func.max(OutboxEvent.id)))) or 0


def oldest_event_id(session: Session) -> int | None:
    """The lowest event id still stored (older ones were pruned); None when empty."""
    return session.scalar(select(func.min(OutboxEvent.id)))


def prune(session: Session, keep: int) -> int:
    """Delete all but the newest `keep` events; returns how many were deleted.

    At least one event is always kept, so `head_event_id` stays the true head.
    """
    if keep < 1:
        raise ValueError("keep must be at least 1 (the head event marks the resume position)")
    cutoff = session.scalar(
        select(OutboxEvent.id).order_by(OutboxEvent.id.desc()).offset(keep - 1).limit(1)
    )
    if cutoff is None:
        return 0
    result = session.execute(delete(OutboxEvent).where(OutboxEvent.id < cutoff))
    return cast(CursorResult[Any], result).rowcount or 0  # a DELETE's result is a cursor's
