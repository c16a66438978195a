"""The TaskService: reconciliation with the Hands that come back, and their grace periods.

Reconciliation (a Hand attached and listed the tasks it holds):

    Registry says        Hand holds it as    verdict          and the Mind
    terminal / unknown   anything            DROP             —
    stale attempt        anything            DROP             —
    offered              running             KEEP_RUNNING     records the lost `accepted`
    offered              finished            RESEND_RESULT    records the lost `accepted`
    accepted             running             KEEP_RUNNING     —
    accepted             finished            RESEND_RESULT    —
    offered              (not listed)        —                offers it again, attempt + 1
    accepted             (not listed)        —                ends it LOST: the Hand forgot it

Only tasks created before the Hand attached count as not listed: a task created since was
offered on the new stream, after the hello. A Hand that does not come back within the grace
period loses all its open tasks (LOST).
After a Mind restart every open task is timed again and its Hand gets the same grace period.
A Hand attached to another live Mind (`Authority.directory`) is not away: its tasks are that
Mind's to reconcile when the Hand comes back to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from mind.remote.authority import Authority
from mind.remote.hub import HandConnection, HandHub
from mind.remote.model import (
    AckStatus,
    HeldState,
    HeldTask,
    ReconcileAction,
    ReconcileVerdict,
    TaskRecord,
    TaskState,
)
from mind.remote.registry import Registry
from mind.tools.summary import summarize_result as tool_summary
from tobe.config import RemoteSettings

log = logging.getLogger(__name__)


def summarize_result(record: TaskRecord) -> str:
    if not record.terminal:
        return record.state.value
    text = record.output if record.state is TaskState.SUCCEEDED else record.error
    return tool_summary(record.state.value, text, len(record.images))


class TaskService:
    def __init__(
        self, registry: Registry, authority: Authority, hub: HandHub, settings: RemoteSettings
    ) -> None:
        self.registry = registry
        self.authority = authority
        self.hub = hub
        self.settings = settings
        self._grace: dict[str, asyncio.Task[None]] = {}
        self._expiring: set[asyncio.Task[None]] = set()
        self._closed = False

    async def start(self) -> None:
        """After a (re)start: time every open task again and give each Hand its grace period."""
        hands: set[str] = set()
        for record in await self.registry.open_tasks():
            self.authority.watch(record)
            hands.add(record.hand_name)
        for name in hands:
            if not self._attached(name):
                self._start_grace(name)

    async def close(self) -> None:
        self._closed = True
        jobs = list(self._grace.values())
        self._grace.clear()
        for job in jobs:
            job.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await job
        await asyncio.gather(*self._expiring, return_exceptions=True)

    # -- reconciliation -------------------------------------------------------------------

    async def hand_attached(
        self, connection: HandConnection, held: list[HeldTask]
    ) -> list[ReconcileVerdict]:
        """The verdict for every task the Hand listed; re-offers and losses for the rest."""
        grace = self._grace.pop(connection.name, None)
        if grace is not None:
            grace.cancel()
        verdicts = [await self._verdict(connection, item) for item in held]
        listed = {item.task_id for item in held}
        for record in await self.registry.open_tasks(connection.name):
            # A task created after this stream attached was offered on it: the hello could
            # not list it, and the Hand has not forgotten it.
            if record.id not in listed and record.created_at < connection.connected_at:
                await self._unlisted(connection, record)
        return verdicts

    def hand_detached(self, connection: HandConnection) -> None:
        if self.hub.get(connection.name) is None:
            self._start_grace(connection.name)

    def _attached(self, name: str) -> bool:
        """Attached here, or to another live Mind."""
        return self.hub.get(name) is not None or self.authority.directory.get(name) is not None

    async def _verdict(self, connection: HandConnection, held: HeldTask) -> ReconcileVerdict:
        record = await self.registry.get(held.task_id)
        drop = ReconcileVerdict(held.task_id, held.attempt, ReconcileAction.DROP)
        if record is None or record.hand_name != connection.name:
            log.warning(
                "hand %s holds task %s it was never offered; told to drop it",
                connection.name,
                held.task_id,
            )
            return drop
        if record.terminal or record.attempt != held.attempt:
            return drop
        if record.state is TaskState.OFFERED:
            report = await self.authority.accepted(connection, record.id, record.attempt)
            if report.status is not AckStatus.OK:
                return drop
        if held.state is HeldState.FINISHED:
            return ReconcileVerdict(record.id, record.attempt, ReconcileAction.RESEND_RESULT)
        return ReconcileVerdict(record.id, record.attempt, ReconcileAction.KEEP_RUNNING)

    async def _unlisted(self, connection: HandConnection, record: TaskRecord) -> None:
        if record.arguments_removed:
            reason = "cancelled: its turn ended and took its sensitive arguments with it"
            await self.authority.end_mind_side(record, TaskState.CANCELLED, reason)
            return
        if record.state is TaskState.OFFERED:
            report = await self.registry.reoffer(record.id, record.attempt)
            if report.applied and report.task is not None:
                self.authority.send_offer(connection, report.task)
            return
        await self.authority.end_mind_side(
            record, TaskState.LOST, "lost: the Hand came back without this task"
        )

    def _start_grace(self, name: str) -> None:
        if not self._closed and name not in self._grace:
            self._grace[name] = asyncio.get_running_loop().create_task(self._expire_grace(name))

    async def _expire_grace(self, name: str) -> None:
        await asyncio.sleep(self.settings.lost_grace)
        me = asyncio.current_task()
        assert me is not None
        if self._grace.get(name) is me:
            del self._grace[name]  # past the sleep: `close` waits for it instead of cancelling
        self._expiring.add(me)
        try:
            await self.expire_hand(name)
        finally:
            self._expiring.discard(me)

    async def expire_hand(self, name: str) -> int:
        """End every open task of a Hand that is not attached as LOST; returns how many."""
        if self._attached(name):
            return 0
        lost = 0
        reason = f"lost: Hand {name!r} did not come back within {self.settings.lost_grace:g} s"
        for record in await self.registry.open_tasks(name):
            report = await self.authority.end_mind_side(record, TaskState.LOST, reason)
            lost += report.applied
        return lost
