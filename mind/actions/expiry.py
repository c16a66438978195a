"""Pending confirmations expire: the scheduler's loop drives `PendingExpiry` as one of its
deadline sources (`mind.scheduler.model.DeadlineSource`), so this package keeps no timer of
its own. A decision on an action past its `expires_at` also expires it, lazily
(`records.expire_if_due`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from mind.actions import records
from mind.events.action_views import PendingActionView
from mind.store.database import Database

# How soon expiries left to another Mind are looked at again (their owner may be gone).
RECHECK = timedelta(seconds=1)


class PendingExpiry:
    def __init__(self, database: Database) -> None:
        self._database = database
        # On a database several Minds share: whether this Mind serves a conversation (its
        # owner expires its actions); None: every conversation is this Mind's.
        self.serves: Callable[[str], Awaitable[bool]] | None = None
        # The scheduler's time of the last look that left due expiries to other Minds.
        self._looked_at: datetime | None = None

    async def next_deadline(self) -> datetime | None:
        """When the earliest pending action expires; None when none is pending. Past ones
        that another Mind's are looked at again after `RECHECK`."""
        deadline = await self._database.read(records.next_expiry)
        looked = self._looked_at
        if looked is not None and deadline is not None and deadline <= looked:
            return looked + RECHECK
        return deadline

    async def run_due(self, now: datetime) -> list[PendingActionView]:
        """Expire every pending action due at `now` that this Mind serves, in one unit with
        their events."""
        keys = None
        if self.serves is not None:
            due = await self._database.read(lambda s: records.expiring_conversations(s, now))
            keys = [key for key in due if await self.serves(key)]
            self._looked_at = now if len(keys) < len(due) else None
        return await self._database.write(lambda tx: records.expire_due(tx, now, keys))
