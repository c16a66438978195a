"""Short store transactions that carry their durable events, and the bus notification."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mind.events.bus import EventBus
from mind.store.models import OutboxEvent
from mind.store.outbox import append_event


@dataclass
class WriteTx:
    """One open write transaction; `event` appends to the outbox inside it."""

    session: AsyncSession
    events: list[OutboxEvent] = field(default_factory=list)

    async def event(
        self, type: str, conversation_key: str, audience: list[str], payload: dict[str, Any]
    ) -> int:
        row = await append_event(
            self.session,
            type=type,
            conversation_key=conversation_key,
            audience=audience,
            payload=payload,
        )
        self.events.append(row)
        return row.id


class Storage:
    """Sessions plus the bus: every committed write with events wakes the subscribers.

    `reads` (default: `sessions`) serves `read()`: on SQLite, connections that never take the
    write lock (`mind.store.engine.create_read_engine`).
    """

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        bus: EventBus,
        reads: async_sessionmaker[AsyncSession] | None = None,
    ) -> None:
        self.sessions = sessions
        self.bus = bus
        self.reads = reads or sessions

    @asynccontextmanager
    async def write(self) -> AsyncIterator[WriteTx]:
        async with self.sessions() as session:
            tx = WriteTx(session)
            async with session.begin():
                yield tx
        if tx.events:
            self.bus.durable_committed(tx.events)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A read transaction: every query inside sees one consistent state."""
        async with self.reads() as session, session.begin():
            yield session
