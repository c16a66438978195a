"""Which conversations this Mind owns.

On PostgreSQL several Minds may share the database, and each conversation is owned by one of
them at a time through a row of `conversation_leases`: the owner's node id, an epoch and an
expiry on the database's clock. `SharedLeases` keeps this Mind's:

* **Taking** a lease (`acquire`) is one conditional upsert: it succeeds when the row is new,
  expired, or already this node's (a restart of the same node: the node lock in
  `mind.cluster.membership` guarantees its old incarnation is gone), and then bumps the epoch.
  Otherwise the conversation is `OwnedElsewhere`, naming the owner and its address.
* **Renewing**: every third of `[mind] lease_seconds`, one statement extends every lease held
  at its epoch; a lease it does not find was taken over and is lost at once.
* **The deadline**: a lease counts as held only until `sent + lease_seconds - margin` on this
  process's monotonic clock, `sent` being taken before the renewal was sent. The database
  extended it from a later instant, so this Mind gives a conversation up before any other Mind
  can take it, even when it cannot reach the database (a partition) or was paused.
* **The fence**: a write that publishes an event of a conversation (`WriteTx.event`, which
  every change of a conversation's state does) first checks, in its own transaction, that the
  lease row still has this node and epoch and has not expired, and locks it `FOR SHARE` until
  commit, so a takeover (an UPDATE of that row) waits for the write or comes before it and
  the write is refused (`LeaseLost`). A Mind that lost its lease cannot write, even if it was
  paused and wakes later.
* **Releasing** (an evicted actor) expires the row rather than deleting it: epochs never go
  back.

A lost lease is handed to `on_lost` (the actor pool stops the conversation's actor without
writing); expired leases of conversations with unfinished work are handed to `on_orphaned`
(the pool takes them over and resumes them as a restart does).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import and_, func, select, text

from mind.cluster.errors import LeaseLost, OwnedElsewhere
from mind.store.database import Database
from mind.store.models import ConversationLease, MindNode
from mind.store.write_tx import WriteTx, table_of

log = logging.getLogger(__name__)

Callback = Callable[[str], Coroutine[Any, Any, None]]

_LEASES = table_of(ConversationLease)

_RENEW = text(
    "UPDATE conversation_leases AS l SET expires_at = now() + make_interval(secs => :seconds) "
    "FROM unnest(CAST(:keys AS text[]), CAST(:epochs AS bigint[])) AS h(key, epoch) "
    "WHERE l.conversation_key = h.key AND l.epoch = h.epoch AND l.node_id = :node "
    "AND l.expires_at > now() RETURNING l.conversation_key"
)

_OWNER = text(
    "SELECT l.node_id, coalesce(n.address, '') AS address FROM conversation_leases l "
    "LEFT JOIN mind_nodes n ON n.node_id = l.node_id WHERE l.conversation_key = :key"
)

_RELEASE = text(
    "UPDATE conversation_leases SET expires_at = now() "
    "WHERE conversation_key = :key AND node_id = :node AND epoch = :epoch"
)

# Conversations nobody holds that have a run a crash left running, or queued inputs.
_ORPHANED = text(
    "SELECT l.conversation_key FROM conversation_leases l WHERE l.expires_at <= now() AND ("
    "EXISTS (SELECT 1 FROM runs r WHERE r.conversation_key = l.conversation_key "
    "AND r.state = 'running') OR EXISTS (SELECT 1 FROM inputs i "
    "WHERE i.conversation_key = l.conversation_key AND i.state = 'queued')) LIMIT 100"
)


@dataclass
class Held:
    epoch: int
    # This process's monotonic clock: past it the lease is given up, whatever the database says.
    deadline: float


class Leases(Protocol):
    """What the actor pool asks of whichever leases the store has."""

    # Whether other Minds may have held a conversation before this one took it.
    shared: bool

    async def acquire(self, key: str) -> None: ...

    def holds(self, key: str) -> bool: ...

    def epoch(self, key: str) -> int:
        """The epoch of `key`'s lease held now (0: not held, or no epochs)."""
        ...

    async def release(self, key: str) -> None: ...


class SoleLeases:
    """One Mind owns every conversation (SQLite: the data directory's state lock says so)."""

    fence = None
    shared = False

    async def acquire(self, key: str) -> None:
        """Every conversation is this Mind's."""

    def holds(self, key: str) -> bool:
        return True

    def epoch(self, key: str) -> int:
        return 0

    async def release(self, key: str) -> None:
        """Nothing to give back."""

    async def orphaned(self) -> list[str]:
        return []


class SharedLeases:
    """This Mind's leases on a database several Minds share (see the module's docstring)."""

    shared = True

    def __init__(
        self,
        database: Database,
        node_id: str,
        seconds: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.database = database
        self.node_id = node_id
        self.seconds = seconds
        # Given up this long before the database would let another Mind take it over.
        self.margin = max(seconds / 10, 0.2)
        self.monotonic = monotonic
        self.on_lost: Callback | None = None
        self.on_orphaned: Callback | None = None
        self._held: dict[str, Held] = {}
        self._task: asyncio.Task[None] | None = None
        self._unreachable = False
        self._callbacks: set[asyncio.Task[None]] = set()

    # -- taking and giving back ------------------------------------------------------------

    async def acquire(self, key: str) -> None:
        """Hold `key`'s lease (already held: nothing to do); OwnedElsewhere when another live
        Mind holds it."""
        if self.holds(key):
            return
        sent = self.monotonic()
        epoch = await self.database.write(lambda tx: self._take(tx, key))
        if epoch is None:
            node_id, address = await self.database.read(
                lambda session: tuple(session.execute(_OWNER, {"key": key}).one())
            )
            raise OwnedElsewhere(key, node_id, address)
        self._held[key] = Held(epoch, sent + self.seconds - self.margin)

    def _take(self, tx: WriteTx, key: str) -> int | None:
        # Imported here: a Mind on SQLite, which takes no lease, never loads this dialect.
        from sqlalchemy.dialects.postgresql import insert

        expires = func.now() + func.make_interval(0, 0, 0, 0, 0, 0, self.seconds)
        statement = (
            insert(_LEASES)
            .values(conversation_key=key, node_id=self.node_id, epoch=1, expires_at=expires)
            .on_conflict_do_update(
                index_elements=[_LEASES.c.conversation_key],
                set_={
                    "node_id": self.node_id,
                    "epoch": _LEASES.c.epoch + 1,
                    "expires_at": expires,
                },
                where=(_LEASES.c.expires_at <= func.now()) | (_LEASES.c.node_id == self.node_id),
            )
            .returning(_LEASES.c.epoch)
        )
        return tx.connection.execute(statement).scalar()

    async def serves(self, key: str) -> bool:
        """Whether this Mind serves `key` now, taking its lease when it is free."""
        try:
            await self.acquire(key)
        except OwnedElsewhere:
            return False
        return True

    def holds(self, key: str) -> bool:
        held = self._held.get(key)
        return held is not None and self.monotonic() < held.deadline

    def epoch(self, key: str) -> int:
        held = self._held.get(key)
        return held.epoch if held is not None else 0

    async def release(self, key: str) -> None:
        """Give `key` back (its actor was let go): another Mind may take it at once."""
        held = self._held.pop(key, None)
        if held is None:
            return
        values = {"key": key, "node": self.node_id, "epoch": held.epoch}
        try:
            await self.database.write(lambda tx: tx.connection.execute(_RELEASE, values))
        except Exception as exc:  # it runs out by itself
            log.warning("could not give back the lease of %s: %s", key, exc)

    # -- the fence -------------------------------------------------------------------------

    def fence(self, tx: WriteTx, key: str) -> None:
        """In a write of `key`'s state: LeaseLost unless this Mind still holds the lease."""
        held = self._held.get(key)
        if held is None or self.monotonic() >= held.deadline:
            raise LeaseLost(key)
        statement = (
            select(ConversationLease.epoch)
            .where(
                and_(
                    ConversationLease.conversation_key == key,
                    ConversationLease.node_id == self.node_id,
                    ConversationLease.epoch == held.epoch,
                    ConversationLease.expires_at > func.now(),
                )
            )
            .with_for_update(read=True)
        )
        if tx.connection.execute(statement).first() is None:
            raise LeaseLost(key)  # the next renewal lets it go

    # -- renewal ---------------------------------------------------------------------------

    async def start(self) -> None:
        self._task = asyncio.create_task(self._keep(), name="leases")

    async def close(self) -> None:
        """Stop renewing and give every lease back (a clean stop: others may take over now)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for key in list(self._held):
            await self.release(key)

    async def _keep(self) -> None:
        """Renew in the background and give leases up at their deadlines meanwhile: a renewal
        that hangs (a partition) must not keep this Mind serving past them."""
        renewing: asyncio.Task[None] | None = None
        while True:
            if renewing is None or renewing.done():
                renewing = asyncio.create_task(self._renew_and_adopt())
            self._expire()
            await asyncio.sleep(self._pause())

    async def _renew_and_adopt(self) -> None:
        await self.renew()
        await self._adopt_orphans()

    def _expire(self) -> None:
        now = self.monotonic()
        for key, held in list(self._held.items()):
            if now >= held.deadline:
                self._drop(key, held)

    def _pause(self) -> float:
        """A third of the lease, or less when a deadline comes first (it is checked then)."""
        now = self.monotonic()
        soonest = min((held.deadline for held in self._held.values()), default=now + 3600)
        return max(0.05, min(self.seconds / 3, soonest - now + 0.01))

    async def renew(self) -> None:
        """Extend every lease held; give up those not found and those past their deadline."""
        self._expire()
        sent = self.monotonic()
        live = dict(self._held)
        try:
            kept = await self.database.write(lambda tx: self._renew(tx, live))
        except Exception as exc:
            if not self._unreachable:
                log.warning("cannot renew this Mind's leases: %s", exc)
            self._unreachable = True
            return
        if self._unreachable:
            log.info("the leases are renewed again")
        self._unreachable = False
        for key, held in live.items():
            if self._held.get(key) is not held:
                continue  # given back meanwhile
            if key in kept:
                held.deadline = sent + self.seconds - self.margin
            else:
                self._drop(key, held)

    def _renew(self, tx: WriteTx, live: dict[str, Held]) -> set[str]:
        tx.session.execute(
            table_of(MindNode)
            .update()
            .where(MindNode.node_id == self.node_id)
            .values(seen_at=func.now())
        )
        if not live:
            return set()
        values: dict[str, Any] = {
            "seconds": self.seconds,
            "keys": list(live),
            "epochs": [held.epoch for held in live.values()],
            "node": self.node_id,
        }
        return {row[0] for row in tx.connection.execute(_RENEW, values)}

    def _drop(self, key: str, held: Held) -> None:
        if self._held.get(key) is not held:
            return
        del self._held[key]
        log.warning("this Mind no longer serves conversation %s: its lease ran out", key)
        if self.on_lost is not None:
            task = asyncio.get_running_loop().create_task(self.on_lost(key))
            self._callbacks.add(task)
            task.add_done_callback(self._callbacks.discard)

    async def orphaned(self) -> list[str]:
        """Conversations whose lease ran out with work left: a run left running, queued
        inputs."""
        return await self.database.read(
            lambda session: [row[0] for row in session.execute(_ORPHANED)]
        )

    async def _adopt_orphans(self) -> None:
        if self.on_orphaned is None or self._unreachable:
            return
        try:
            keys = await self.orphaned()
        except Exception as exc:
            log.warning("cannot look for conversations left by a lost Mind: %s", exc)
            return
        for key in keys:
            try:
                await self.on_orphaned(key)
            except OwnedElsewhere:
                continue  # another Mind was quicker
            except Exception:
                log.exception("could not take conversation %s over", key)
