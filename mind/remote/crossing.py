"""Hand tasks between Minds that share one PostgreSQL database.

The owner of a conversation records a call's task as always; when the Hand is attached to
another Mind (`mind.remote.directory`) the task's row goes with a signal on `tobe_tasks`, in
the same transaction, that the Hand's Mind hears and turns into the offer on the Hand's
stream. That Mind applies the Hand's reports through the Registry as it would its own, and
every transition the Registry commits signals the task's change in its transaction too: the
owner's waiter wakes and reads the terminal, its timers follow the task's state. Cancels and
Mind-side terminals the owner commits reach the Hand through its Mind as a `CancelFrame`.
Progress, which writes nothing, is signalled on its own and reaches the owner's waiter, which
publishes it as for a Hand of its own (and the relay to every Mind's subscribers).

A Mind ignores its own signals: what it commits it has already applied.
"""

from __future__ import annotations

import asyncio
import logging

from mind.remote.authority import Authority
from mind.remote.hub import CancelFrame, HandHub
from mind.remote.model import TaskState
from mind.remote.signals import MIND_SIDE, SignalKind, TaskSignal

log = logging.getLogger(__name__)


class TaskCrossing:
    """Applies the other Minds' task signals on this one: offers to and cancels for the Hands
    attached here, terminals and progress for the calls waiting here."""

    def __init__(self, node_id: str, hub: HandHub, authority: Authority) -> None:
        self.node_id = node_id
        self.hub = hub
        self.authority = authority
        self._applying: set[asyncio.Task[None]] = set()

    def heard(self, payload: str) -> None:
        """A notification on `TASKS_CHANNEL`."""
        signal = TaskSignal.decode(payload)
        if signal.node == self.node_id:
            return
        if signal.kind is SignalKind.PROGRESS:
            self.authority.progress_heard(signal.task_id, signal.message, signal.fraction)
            return
        job = asyncio.get_running_loop().create_task(self.apply(signal))
        self._applying.add(job)
        job.add_done_callback(self._applying.discard)

    async def apply(self, signal: TaskSignal) -> None:
        try:
            await self._apply(signal)
        except Exception:
            log.exception("could not apply the %s signal of task %s", signal.kind, signal.task_id)

    async def _apply(self, signal: TaskSignal) -> None:
        local = self.hub.get(signal.hand_name)
        if signal.kind is SignalKind.OFFER:
            if signal.to != self.node_id or local is None:
                return  # the owner's accept timeout, or the Hand's reconciliation, follows
            record = await self.authority.registry.get(signal.task_id)
            if record is not None and record.state is TaskState.OFFERED:
                self.authority.relay_offer(local, record)
            return
        if local is None and not self.authority.follows(signal.task_id):
            return
        record = await self.authority.registry.get(signal.task_id)
        if record is None:
            return
        if local is not None and (
            (record.terminal and record.state in MIND_SIDE)
            or (signal.kind is SignalKind.CANCEL and not record.terminal)
        ):
            reason = record.error if record.terminal else record.cancel_reason
            local.send(CancelFrame(record.id, record.attempt, reason))
        if signal.kind is SignalKind.CHANGE:
            self.authority.changed(record)

    async def close(self) -> None:
        await asyncio.gather(*self._applying, return_exceptions=True)
