"""The Authority: routes Mind offers and cancels to Hands, and Hand reports to the Registry.

It is the only writer of task state besides the TaskService's reconciliation: every Hand
report goes through `Registry` and is answered with an ack carrying the Registry's verdict,
after the change (if any) is committed. When a task reaches its terminal the Authority wakes
the tool call waiting for it, stops its timers, tells the Hand to stop if the terminal came
from the Mind's side (timeout, lost), and hands background results to the conversation.

A result's images are checked by their bytes, like a person's (`mind.conversation.images`),
before the Registry sees the result: one breaking the limits, or images with a failed result,
is refused INVALID with the task unchanged, so the Hand can send the result again without them.

On a database several Minds share, a Hand attached to another Mind (`directory`) is offered
through that Mind (`mind.remote.crossing`): the task is recorded here with its signal, the
timers run here, and what the other Mind commits or hears (changes, progress) reaches this
Mind's waiters through `changed` and `progress_heard`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from mind.cluster.errors import LeaseLost
from mind.conversation.images import CheckedImage, check_images
from mind.errors import InvalidInput
from mind.remote.directory import NoDirectory
from mind.remote.hub import AckFrame, CancelFrame, HandConnection, HandHub, OfferFrame
from mind.remote.model import (
    AckStatus,
    HandResult,
    ImageLimits,
    NewTask,
    Report,
    ReportKind,
    TaskRecord,
    TaskState,
)
from mind.remote.registry import Registry
from mind.remote.signals import TaskSignals
from mind.store.models import utcnow
from tobe import telemetry
from tobe.config import MindSettings, RemoteSettings

log = logging.getLogger(__name__)

ProgressCallback = Callable[[str, float | None], None]
BackgroundSink = Callable[[TaskRecord], Awaitable[None]]


class HandUnavailable(Exception):
    """The Hand a call is meant for is not attached.

    Internal: the remote tool turns it into a tool result the model reads."""


@dataclass(eq=False)
class TaskWaiter:
    """The Mind-side end of one task: its terminal, and where its progress goes."""

    task_id: str
    on_progress: ProgressCallback | None = None
    done: asyncio.Future[TaskRecord] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    async def terminal(self) -> TaskRecord:
        return await asyncio.shield(self.done)


class Authority:
    def __init__(
        self,
        registry: Registry,
        hub: HandHub,
        settings: RemoteSettings,
        *,
        background_sink: BackgroundSink | None = None,
        image_limits: ImageLimits | None = None,
        directory: NoDirectory | None = None,
        signals: TaskSignals | None = None,
    ) -> None:
        self.registry = registry
        self.hub = hub
        # The Hands attached to the other Minds, and how progress reaches their callers.
        self.directory = directory or NoDirectory()
        self.signals = signals
        self.settings = settings
        self.background_sink = background_sink
        defaults = MindSettings()
        self.image_limits = image_limits or ImageLimits(
            defaults.max_image_bytes, defaults.max_images
        )
        self._waiters: dict[str, TaskWaiter] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        # Result deliveries and Mind-side terminals being committed; `close` waits for them.
        self._background: set[asyncio.Task[object]] = set()
        # Set by a stop: tasks then keep running on their Hands for the next Mind to take.
        self.stopping = False

    # -- Mind side ------------------------------------------------------------------------

    async def offer(
        self, spec: NewTask, *, on_progress: ProgressCallback | None = None
    ) -> TaskWaiter:
        """Record a task and send its first offer; the waiter resolves at its terminal."""
        connection = self.hub.get(spec.hand_name)
        if connection is None:
            return await self._offer_elsewhere(spec, on_progress)
        record = await self.registry.create(spec)
        waiter = TaskWaiter(record.id, on_progress)
        self._waiters[record.id] = waiter
        self.send_offer(connection, record)
        return waiter

    async def _offer_elsewhere(
        self, spec: NewTask, on_progress: ProgressCallback | None
    ) -> TaskWaiter:
        """Record a task for a Hand attached to another Mind, which sends the offer."""
        elsewhere = self.directory.get(spec.hand_name)
        if elsewhere is None:
            raise HandUnavailable(f"Hand {spec.hand_name!r} is not connected")
        record = await self.registry.create(spec, offer_to=elsewhere.node_id)
        waiter = TaskWaiter(record.id, on_progress)
        self._waiters[record.id] = waiter
        self._arm(record, self.settings.accept_timeout, "accept timeout: the Hand did not answer")
        # A change the other Mind committed before the waiter existed was not followed.
        current = await self.registry.get(record.id)
        if current is not None:
            self.changed(current)
        return waiter

    def relay_offer(self, connection: HandConnection, record: TaskRecord) -> None:
        """Send the offer of a task another Mind recorded (and times) to a Hand attached here."""
        connection.send(
            OfferFrame(
                task=record,
                accept_timeout=self.settings.accept_timeout,
                run_timeout=self.settings.run_timeout,
                trace_context=telemetry.carrier(),
            )
        )

    def follows(self, task_id: str) -> bool:
        """Whether a call waits for the task here, or its timers run here."""
        return task_id in self._waiters or task_id in self._timers

    def changed(self, record: TaskRecord) -> None:
        """Another Mind committed a change of a task followed here: settle its terminal, or
        time its new state (a timer stopped meanwhile stays stopped)."""
        if record.terminal:
            self._settle(record)
        elif record.id in self._timers:
            self.watch(record)

    def progress_heard(self, task_id: str, message: str, fraction: float | None) -> None:
        """Progress of a task running on a Hand attached to another Mind."""
        waiter = self._waiters.get(task_id)
        if waiter is not None and waiter.on_progress is not None:
            waiter.on_progress(message, fraction)

    def send_offer(self, connection: HandConnection, record: TaskRecord) -> None:
        """Send (or resend, after a re-offer) the offer for the task's current attempt."""
        self._arm(record, self.settings.accept_timeout, "accept timeout: the Hand did not answer")
        connection.send(
            OfferFrame(
                task=record,
                accept_timeout=self.settings.accept_timeout,
                run_timeout=self.settings.run_timeout,
                trace_context=telemetry.carrier(),
            )
        )

    async def rejoin(
        self, tool_call_id: str, *, on_progress: ProgressCallback | None = None
    ) -> TaskWaiter | None:
        """Wait again for the task a tool call already has (after a restart); None if none.

        The waiter is registered before the task is read again, so a terminal committed in
        between is never missed: either it settles the waiter or the read sees it.
        """
        record = await self.registry.for_call(tool_call_id)
        if record is None:
            return None
        waiter = self._waiters.get(record.id)
        if waiter is None:
            waiter = self._waiters[record.id] = TaskWaiter(record.id, on_progress)
        current = await self.registry.get(record.id)
        if current is not None and current.terminal and not waiter.done.done():
            self._waiters.pop(record.id, None)
            waiter.done.set_result(current)
        elif current is not None and not current.terminal and current.id not in self._timers:
            self.watch(current)  # taken over from another Mind, which timed it
        return waiter

    def begin_shutdown(self) -> None:
        """From now on a cancelled tool call leaves its task running (see `stopping`)."""
        self.stopping = True

    async def cancel(self, task_id: str, reason: str) -> Report:
        """Record a cancel request and pass it to the Hand holding the task."""
        report = await self.registry.request_cancel(task_id, reason)
        if report.applied and report.task is not None:
            connection = self.hub.get(report.task.hand_name)
            if connection is not None:
                connection.send(CancelFrame(task_id, report.task.attempt, reason))
        return report

    def forget(self, task_id: str) -> None:
        """Stop waiting for a task whose caller went away (its terminal still gets recorded)."""
        self._waiters.pop(task_id, None)

    def watch(self, record: TaskRecord) -> None:
        """Time an open task found in the store (after a restart) from its last change."""
        elapsed = max(0.0, (utcnow() - record.updated_at).total_seconds())
        if record.state is TaskState.OFFERED:
            self._arm(
                record,
                max(0.0, self.settings.accept_timeout - elapsed),
                "accept timeout: the Hand did not answer",
            )
        else:
            self._arm(
                record,
                max(0.0, self.settings.run_timeout - elapsed),
                "run timeout: no result from the Hand",
            )

    async def end_mind_side(self, record: TaskRecord, state: TaskState, reason: str) -> Report:
        """Commit a Mind-side terminal (timed out, cancelled, lost, failed) and settle it."""
        if state is TaskState.TIMED_OUT:
            report = await self.registry.time_out(record.id, record.attempt, reason)
        elif state is TaskState.CANCELLED:
            report = await self.registry.cancel(record.id, record.attempt, reason)
        elif state is TaskState.LOST:
            report = await self.registry.mark_lost(record.id, record.attempt, reason)
        else:
            report = await self.registry.fail(record.id, record.attempt, reason)
        if report.applied and report.task is not None:
            connection = self.hub.get(record.hand_name)
            if connection is not None:
                connection.send(CancelFrame(record.id, record.attempt, reason))
            self._settle(report.task)
        elif report.status is AckStatus.ALREADY_TERMINAL and report.task is not None:
            # Committed elsewhere, and not heard (another Mind's signal lost with the LISTEN
            # connection): the recorded terminal is the task's. Its background result, if
            # any, went where that terminal was committed.
            self._settle(report.task, deliver=False)
        return report

    # -- Hand reports ---------------------------------------------------------------------

    # Each report is answered with an ack naming its kind and echoing its `seq` (0: none).

    async def accepted(
        self, connection: HandConnection, task_id: str, attempt: int, *, seq: int = 0
    ) -> Report:
        report = await self.registry.accept(task_id, attempt, hand_name=connection.name)
        if report.applied and report.task is not None:
            self._arm(
                report.task, self.settings.run_timeout, "run timeout: no result from the Hand"
            )
            if report.task.cancel_requested_at is not None:
                connection.send(CancelFrame(task_id, attempt, report.task.cancel_reason))
        return self._ack(connection, task_id, attempt, report, ReportKind.ACCEPTED, seq)

    async def rejected(
        self, connection: HandConnection, task_id: str, attempt: int, reason: str, *, seq: int = 0
    ) -> Report:
        report = await self.registry.reject(task_id, attempt, reason, hand_name=connection.name)
        return self._ack(connection, task_id, attempt, report, ReportKind.REJECTED, seq)

    async def progress(
        self,
        connection: HandConnection,
        task_id: str,
        attempt: int,
        message: str,
        fraction: float | None,
        *,
        seq: int = 0,
    ) -> Report:
        report = await self.registry.check_progress(task_id, attempt, hand_name=connection.name)
        if report.applied:
            waiter = self._waiters.get(task_id)
            if waiter is not None and waiter.on_progress is not None:
                waiter.on_progress(message, fraction)
            elif waiter is None and self.signals is not None:
                await self.signals.progress(task_id, connection.name, message, fraction)
        return self._ack(connection, task_id, attempt, report, ReportKind.PROGRESS, seq)

    async def result(
        self,
        connection: HandConnection,
        task_id: str,
        attempt: int,
        result: HandResult,
        *,
        seq: int = 0,
    ) -> Report:
        try:
            images = await self._checked_images(result)
        except InvalidInput as exc:
            log.info("hand %s: result of task %s refused: %s", connection.name, task_id, exc)
            report = Report(AckStatus.INVALID, None, str(exc))
        else:
            report = await self.registry.finish(
                task_id,
                attempt,
                result,
                hand_name=connection.name,
                images=images,
                accepts=connection.result_accepts,
            )
        return self._ack(connection, task_id, attempt, report, ReportKind.RESULT, seq)

    async def _checked_images(self, result: HandResult) -> list[CheckedImage]:
        """The result's images, checked by their bytes off the event loop (none: no check)."""
        if not result.images:
            return []
        if not result.ok:
            raise InvalidInput("a failed result cannot carry images; send it without them")
        return await asyncio.to_thread(self._check_images, result)

    def _check_images(self, result: HandResult) -> list[CheckedImage]:
        limits = self.image_limits
        return check_images(
            result.images,
            max_bytes=limits.max_bytes,
            max_count=limits.max_count,
            carrier="the result",
        )

    # -- internals ------------------------------------------------------------------------

    def _ack(
        self,
        connection: HandConnection,
        task_id: str,
        attempt: int,
        report: Report,
        kind: ReportKind,
        seq: int,
    ) -> Report:
        if report.status is AckStatus.UNKNOWN_TASK:
            log.warning(
                "hand %s sent a frame for task %s it was never offered; refused",
                connection.name,
                task_id,
            )
        ack = AckFrame(task_id, attempt, report.status, report.message, kind, seq)
        if report.applied and report.task is not None and report.task.terminal:
            self._settle(report.task)
            # The call waiting for the terminal goes first; the ack's write follows at once.
            asyncio.get_running_loop().call_soon(connection.send, ack)
        else:
            connection.send(ack)
        return report

    def _settle(self, record: TaskRecord, *, deliver: bool = True) -> None:
        timer = self._timers.pop(record.id, None)
        if timer is not None:
            timer.cancel()
        waiter = self._waiters.pop(record.id, None)
        if waiter is not None and not waiter.done.done():
            waiter.done.set_result(record)
        if deliver and record.background and self.background_sink is not None:
            job = asyncio.get_running_loop().create_task(self._deliver(record))
            self._background.add(job)
            job.add_done_callback(self._background.discard)

    async def _deliver(self, record: TaskRecord) -> None:
        assert self.background_sink is not None
        try:
            await self.background_sink(record)
        except LeaseLost:
            # Another Mind owns the conversation: it hears the terminal and delivers it.
            log.info("background task %s: its conversation's owner delivers the result", record.id)
        except Exception:
            log.exception("could not deliver the result of background task %s", record.id)

    def _arm(self, record: TaskRecord, delay: float, reason: str) -> None:
        old = self._timers.pop(record.id, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self._timers[record.id] = loop.call_later(delay, self._expire, record, reason)

    def _expire(self, record: TaskRecord, reason: str) -> None:
        self._timers.pop(record.id, None)
        job = asyncio.get_running_loop().create_task(
            self.end_mind_side(record, TaskState.TIMED_OUT, reason)
        )
        self._background.add(job)
        job.add_done_callback(self._background.discard)

    async def close(self) -> None:
        """Stop the timers; let started terminal commits and deliveries finish."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        await asyncio.gather(*self._background, return_exceptions=True)
