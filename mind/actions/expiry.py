"""Pending confirmations expire: the scheduler's loop drives `PendingExpiry` as one of its
deadline sources (`mind.scheduler.model.DeadlineSource`), so this package keeps no timer of
its own. A decision on an action past its `expires_at` also expires it, lazily
(`records.expire_if_due`)."""

from __future__ import annotations

from datetime import datetime

from mind.actions import records
from mind.events.action_views import PendingActionView
from mind.store.database import Database


class PendingExpiry:
    def __init__(self, database: Database) -> None:
        self._database = database

    async def next_deadline(self) -> datetime | None:
        """When the earliest pending action expires; None when none is pending."""
        return await self._database.read(records.next_expiry)

    async def run_due(self, now: datetime) -> list[PendingActionView]:
        """Expire every pending action due at `now`, in one unit with their events."""
        return await self._database.write(lambda tx: records.expire_due(tx, now))
