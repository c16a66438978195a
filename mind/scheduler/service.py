"""The scheduler's loop: claim what is due, then deliver it.

1. At `start`, firings claimed but never delivered (a crash between claim and delivery) are
   delivered again; delivery is idempotent by `FiringDelivery.idempotency_key`.
2. Each turn claims, in one unit, every time-triggered action due now, then the firings of
   memory writes committed since its cursor, delivers each claim, and runs the due deadline
   sources (`add_deadlines`).
3. It then sleeps until the earliest next due time or deadline, but never longer than
   `[scheduler] max_sleep` (a wall-clock jump or a moved `FileClock` is noticed within one
   sleep), waking early on a durable commit that can change what is due (a schedule changed,
   memory written, an action registered that waits for the owner) or `wake()`. Other commits
   (every message, run and tool call) are let pass without a look at the store: a busy Mind
   would otherwise read it again after each of them.

On a database several Minds share, each Mind claims only the due actions of conversations
it serves (`serves`: it holds their lease or takes it), so a proactive run happens on its
conversation's owner. Each turn it also delivers the firings claimed but never queued
(`records.never_queued`) of the conversations it serves: those whose Mind failed to deliver
them, or died before it did and may never start again to deliver them, so the Mind that
takes the conversation over does. While others' actions are due or their firings wait, it
looks again every `RECHECK` seconds, since their owner may be gone.

A failed delivery is logged and left for the next start (`records.undelivered`), or on a
shared database for the next turn; an exception in a turn is logged and the loop backs off and
goes on: it ends only at `stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta

from mind.awareness.notes import Routed
from mind.events.bus import BusSubscription, EventBus
from mind.memory.store import MEMORY_CHANGED
from mind.scheduler import records
from mind.scheduler.conditions import ConditionWatch
from mind.scheduler.model import Clock, DeadlineSource, FiringDelivery
from mind.store.database import Database
from tobe import telemetry
from tobe.config import SchedulerSettings
from tobe.runtime.backoff import Backoff
from tobe.telemetry import instruments

log = logging.getLogger(__name__)

Deliver = Callable[[FiringDelivery], Awaitable[None]]
# Whether this Mind serves conversation `key` now (takes its lease when free).
Serves = Callable[[str], Awaitable[bool]]
RECHECK = timedelta(seconds=1)
# The durable events after which something may be due sooner than the loop thought.
WAKING_EVENTS = frozenset({"schedule_changed", "action_changed", MEMORY_CHANGED})


class Scheduler:
    def __init__(
        self,
        database: Database,
        clock: Clock,
        deliver: Deliver,
        settings: SchedulerSettings,
        bus: EventBus,
    ) -> None:
        self._database = database
        self._clock = clock
        self._deliver = deliver
        self._settings = settings
        self._bus = bus
        self._deadlines: list[DeadlineSource] = []
        self._conditions = ConditionWatch(database, clock)
        self._subscription: BusSubscription | None = None
        self._woken = asyncio.Event()
        # Whether memory writes may wait to be matched (at start: whatever came meanwhile).
        self._memory_news = True
        self._task: asyncio.Task[None] | None = None
        # Set on a shared database (`mind.cluster`); None: every conversation is this Mind's.
        self.serves: Serves | None = None
        self._left_for_others = False

    def add_deadlines(self, source: DeadlineSource) -> None:
        """Keep `source`'s deadlines too (before `start`)."""
        self._deadlines.append(source)

    async def start(self) -> None:
        """Deliver what a crash left undelivered, then run the loop until `stop`."""
        self._subscription = self._bus.subscribe(include_ephemeral=False)
        for firing in await self._database.read(records.undelivered):
            # On a shared database another live Mind's firings are its own to deliver.
            if self.serves is None or await self.serves(firing.conversation_key):
                await self._hand_over(firing)
        # Sets the memory cursor on a first start, so writes from now on are matched.
        for firing in await self._conditions.memory_written():
            await self._hand_over(firing)
        self._memory_news = False
        self._task = asyncio.create_task(self._run(), name="scheduler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None

    def wake(self) -> None:
        """Look at the schedules now instead of at the end of the current sleep."""
        self._woken.set()

    async def observed(self, routed: Sequence[Routed]) -> None:
        """The Awareness router's hook: claim and deliver the firings `routed` causes. Raises
        when the claim could not be stored, so the router retries the batch."""
        for firing in await self._conditions.observed(routed):
            await self._hand_over(firing)

    async def _run(self) -> None:
        backoff = Backoff()
        while True:
            try:
                await self._turn()
                backoff.reset()
                # What committed during the turn was seen by it: the next sleep starts afresh.
                self._woken.clear()
                self._take_news()
                await self._sleep(await self._next_wake())
            except asyncio.CancelledError:
                raise
            except Exception:
                delay = backoff.next_delay()
                log.exception("scheduler turn failed; retrying in %.1f s", delay)
                await asyncio.sleep(delay)

    async def _turn(self) -> None:
        now = self._clock.now()
        due = await self._database.read(records.earliest_due)
        self._left_for_others = False
        if due is not None and due <= now:
            keys = await self._served(now)
            for firing in await self._database.write(lambda tx: records.claim_due(tx, now, keys)):
                await self._hand_over(firing)
        if self.serves is not None:
            for firing in await self._left_behind():
                await self._hand_over(firing)
        if self._memory_news:
            self._memory_news = False
            for firing in await self._conditions.memory_written():
                await self._hand_over(firing)
        for source in self._deadlines:
            deadline = await source.next_deadline()
            if deadline is not None and deadline <= now:
                await source.run_due(now)

    async def _served(self, now: datetime) -> list[str] | None:
        """The due conversations this Mind serves (None: all of them)."""
        if self.serves is None:
            return None
        due = await self._database.read(lambda session: records.due_conversations(session, now))
        served = [key for key in due if await self.serves(key)]
        self._left_for_others = len(served) < len(due)
        return served

    async def _left_behind(self) -> list[FiringDelivery]:
        """The firings claimed but never queued of the conversations this Mind serves."""
        assert self.serves is not None
        waiting = await self._database.read(records.never_queued)
        served = [firing for firing in waiting if await self.serves(firing.conversation_key)]
        self._left_for_others |= len(served) < len(waiting)
        return served

    async def _next_wake(self) -> datetime | None:
        due = await self._database.read(records.earliest_due)
        now = self._clock.now()
        if self._left_for_others:
            # Another Mind's to claim or deliver: look again in a while.
            due = now + RECHECK if due is None or due <= now else min(due, now + RECHECK)
        moments = [due]
        moments += [await source.next_deadline() for source in self._deadlines]
        known = [moment for moment in moments if moment is not None]
        return min(known) if known else None

    async def _sleep(self, until: datetime | None) -> None:
        timeout = self._settings.max_sleep
        if until is not None:
            timeout = min(timeout, max(0.0, (until - self._clock.now()).total_seconds()))
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while (left := end - loop.time()) > 0:
            waits: list[asyncio.Future[object]] = [asyncio.ensure_future(self._woken.wait())]
            if self._subscription is not None:
                waits.append(asyncio.ensure_future(self._subscription.wait(left)))
            try:
                await asyncio.wait(waits, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()
            if self._woken.is_set() or self._take_news():
                return

    def _take_news(self) -> bool:
        """Take the commits heard so far; whether one may make something due sooner (noting
        whether a memory write may have committed since the last look)."""
        if self._subscription is None:
            return False
        rows, must_read = self._subscription.take_durable()
        if must_read or any(row.type == MEMORY_CHANGED for row in rows):
            self._memory_news = True
        return must_read or any(row.type in WAKING_EVENTS for row in rows)

    async def _hand_over(self, firing: FiringDelivery) -> None:
        lag = max(0.0, (self._clock.now() - firing.due_at).total_seconds())
        instruments.scheduler_lag.record(lag)
        attributes: dict[str, telemetry.AttributeValue] = {
            "tobe.schedule.id": firing.schedule_id,
            "tobe.firing.id": firing.firing_id,
            "gen_ai.conversation.id": firing.conversation_key,
            "tobe.scheduler.lag": lag,
        }
        try:
            with telemetry.span("schedule firing", attributes=attributes):
                await self._deliver(firing)
        except Exception:
            # Claimed and not delivered: `undelivered` hands it over again at the next start
            # (`never_queued` at the next turn, on a shared database).
            log.exception(
                "delivering firing %s of %s to %s failed; it is delivered again %s",
                firing.firing_id,
                firing.schedule_id,
                firing.conversation_key,
                "at the next start" if self.serves is None else "at the next turn",
            )
