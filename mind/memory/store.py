"""Memory in the store: each write or delete is one unit of work with its `memory_changed`
event, and a write checks the quotas inside that unit.

A unit first locks the conversation's row (`SELECT … FOR UPDATE` on PostgreSQL, where units
run concurrently on a pool; SQLite's single writer already serialises them), so two writes to
one conversation cannot both pass the quota check on the same old totals.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, delete, select
from sqlalchemy.orm import Session

from mind.conversation import queries
from mind.errors import NotFound
from mind.events.views import MemoryChangedView
from mind.memory.rules import check_key, check_quota, check_text, text_bytes
from mind.store.database import Database
from mind.store.models import Conversation, MemoryEntry, utcnow
from mind.store.write_tx import WriteTx

MEMORY_CHANGED = "memory_changed"
# A module constant: the store compiles each statement once per dialect.
# Built once: the decision layer lists a conversation's memory on every input.
_LISTING = select(MemoryEntry).where(MemoryEntry.conversation_key == bindparam("key"))
_DELETE = delete(MemoryEntry).where(
    MemoryEntry.conversation_key == bindparam("conversation_key"),
    MemoryEntry.key == bindparam("key"),
)


@dataclass(frozen=True)
class MemoryEntryView:
    key: str
    text: str
    updated_at: datetime

    @property
    def size_bytes(self) -> int:
        return text_bytes(self.text)


@dataclass(frozen=True)
class MemoryListing:
    """A conversation's entries sorted by key, and the bytes they hold against the quota."""

    entries: tuple[MemoryEntryView, ...]

    @property
    def total_bytes(self) -> int:
        return sum(entry.size_bytes for entry in self.entries)


def listing(session: Session, conversation_key: str) -> MemoryListing:
    rows = session.scalars(_LISTING, {"key": conversation_key})
    entries = (MemoryEntryView(row.key, row.text, row.updated_at) for row in rows)
    # Sorted here, by code point: a database collation would order keys differently.
    return MemoryListing(tuple(sorted(entries, key=lambda entry: entry.key)))


def _lock_audience(session: Session, conversation_key: str) -> list[str]:
    """Lock the conversation's row for this unit; its owner and members, who hear of it."""
    owner = session.scalar(
        select(Conversation.owner).where(Conversation.key == conversation_key).with_for_update()
    )
    if owner is None:
        raise NotFound(f"no conversation {conversation_key!r}")
    return [owner, *queries.members_of(session, conversation_key)]


def _announce(
    tx: WriteTx, conversation_key: str, audience: list[str], view: MemoryChangedView
) -> None:
    tx.event(MEMORY_CHANGED, conversation_key, audience, view.to_payload())


def write_entry(
    tx: WriteTx, conversation_key: str, key: str, text: str, *, run_id: str
) -> MemoryListing:
    """Write (or overwrite) one entry in the caller's unit; the listing after the write."""
    check_key(key)
    size = check_text(key, text)
    session = tx.session
    audience = _lock_audience(session, conversation_key)
    current = listing(session, conversation_key)
    others = {entry.key: entry.size_bytes for entry in current.entries if entry.key != key}
    check_quota(key, size, others)
    session.merge(
        MemoryEntry(conversation_key=conversation_key, key=key, text=text, updated_at=utcnow())
    )
    session.flush()
    _announce(tx, conversation_key, audience, MemoryChangedView(key, False, size, run_id))
    return listing(session, conversation_key)


def delete_entry(tx: WriteTx, conversation_key: str, key: str, *, run_id: str) -> bool:
    """Delete one entry in the caller's unit; whether it existed (a missing one succeeds and
    announces nothing, since nothing changed)."""
    check_key(key)
    session = tx.session
    audience = _lock_audience(session, conversation_key)
    removed = tx.execute(_DELETE, conversation_key=conversation_key, key=key)
    if removed:
        _announce(tx, conversation_key, audience, MemoryChangedView(key, True, 0, run_id))
    return bool(removed)


class Memory:
    """Memory operations as units of the store's writer (the tools' and the owner's door)."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def list(self, conversation_key: str) -> MemoryListing:
        return await self._database.read(lambda session: listing(session, conversation_key))

    async def write(
        self, conversation_key: str, key: str, text: str, *, run_id: str
    ) -> MemoryListing:
        return await self._database.write(
            lambda tx: write_entry(tx, conversation_key, key, text, run_id=run_id)
        )

    async def delete(self, conversation_key: str, key: str, *, run_id: str) -> bool:
        return await self._database.write(
            lambda tx: delete_entry(tx, conversation_key, key, run_id=run_id)
        )
