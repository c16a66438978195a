"""The Registry: the persisted state machine of remote tasks.

    offered --accept--> accepted --result--> succeeded | failed | cancelled
       |                   |
       +--reject--> rejected
       +--result (a Hand granted result_accepts)--> succeeded | failed | cancelled
       +--(re-offer: attempt + 1, stays offered)
       +------------------+--timeout--> timed_out      (Mind side)
       +------------------+--lost-----> lost           (Mind side)

Every change is one unit of work (`mind.store.database`): it reads the task, decides, and
applies a compare-and-set on the task's (state, attempt) plus one `task_transitions` row, all
in the same transaction, so a Hand report costs one write and no read before it. The partial
unique index on terminal transitions refuses a second terminal even when two writers race past
the compare-and-set on different backends.
A report that cannot apply (unknown task, another Hand's task, terminal task, stale attempt,
wrong state) changes nothing and says why in its `AckStatus`. Cancel is not a state: it is
recorded on the task (`cancel_requested_at`) and the task still ends in one terminal.
On a database several Minds share, each change also signals the other Minds in its
transaction (`signals`, `mind.remote.signals`); on SQLite there is no one to tell.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy.exc import IntegrityError

from mind.conversation.images import CheckedImage
from mind.conversation.media import store_images
from mind.remote.model import (
    AckStatus,
    HandResult,
    NewTask,
    Report,
    TaskRecord,
    TaskState,
    Transition,
)
from mind.remote.signals import SignalKind, TaskSignals
from mind.remote.task_rows import (
    BY_CALL,
    BY_ID,
    OPEN,
    OPEN_TASKS,
    REQUEST_CANCEL,
    TRANSITIONS,
    binding_columns,
    move_statement,
    task_record,
)
from mind.sealing.cipher import is_envelope, seal, seal_text
from mind.sealing.keyring import KeyRing
from mind.sealing.turns import store_loader
from mind.store.database import Database
from mind.store.models import RemoteRun, Task, TaskTransition, utcnow
from mind.store.write_tx import WriteTx

log = logging.getLogger(__name__)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class Registry:
    """Arbitrates exactly one terminal per task; safe to share across coroutines and processes."""

    def __init__(
        self,
        database: Database,
        keyring: KeyRing | None = None,
        signals: TaskSignals | None = None,
    ) -> None:
        self.database = database
        self.signals = signals
        # A sealed run's task arguments, outputs and errors are stored sealed (`mind.sealing`).
        self.keyring = keyring or KeyRing(store_loader(database))

    def _record(self, row: Any) -> TaskRecord:
        return task_record(row, self.keyring)

    def _sealed_text(self, row: Any, text: str) -> str:
        """`text` as a task of `row` stores it: sealed when its arguments are, dropped when
        their key is gone (the turn ended and nothing of it may be readable)."""
        envelope = row.arguments
        if not is_envelope(envelope):
            return text
        key = self.keyring.key(str(envelope["sealed_by"]))
        return "" if key is None else seal_text(text, str(envelope["sealed_by"]), key)

    # -- creation -------------------------------------------------------------------------

    async def create(self, spec: NewTask, *, offer_to: str = "") -> TaskRecord:
        """Record a new task (state offered, attempt 1) before it is sent to the Hand; with
        `offer_to`, the Mind the Hand is attached to is signalled to send the offer."""
        now = utcnow()
        record = TaskRecord(
            id=new_id("t"),
            remote_run_id=new_id("rr"),
            conversation_key=spec.conversation_key,
            run_id=spec.run_id,
            tool_call_id=spec.tool_call_id,
            hand_name=spec.hand_name,
            tool=spec.tool,
            attempt=1,
            state=TaskState.OFFERED,
            arguments=dict(spec.arguments),
            approval=spec.approval,
            detail_mode=spec.detail_mode,
            background=spec.background,
            cancel_requested_at=None,
            cancel_reason="",
            output="",
            error="",
            created_at=now,
            updated_at=now,
        )
        run = {
            "id": record.remote_run_id,
            "conversation_key": record.conversation_key,
            "run_id": record.run_id,
            "hand_name": record.hand_name,
            "background": record.background,
            "detail_mode": record.detail_mode.value,
            "created_at": now,
        }
        task = {
            "id": record.id,
            "remote_run_id": record.remote_run_id,
            "tool_call_id": record.tool_call_id,
            "hand_name": record.hand_name,
            "tool": record.tool,
            "attempt": 1,
            "state": TaskState.OFFERED.value,
            "arguments": self._sealed_arguments(record),
            **binding_columns(record.approval),
            "created_at": now,
            "updated_at": now,
        }
        transition = {
            "task_id": record.id,
            "attempt": 1,
            "from_state": "",
            "to_state": "offered",
            "created_at": now,
        }

        def unit(tx: WriteTx) -> None:
            tx.insert_values(RemoteRun, run)  # foreign keys first
            tx.insert_values(Task, task)
            tx.insert_values(TaskTransition, transition)
            if offer_to and self.signals is not None:
                self.signals.in_tx(tx, SignalKind.OFFER, record, to=offer_to)

        await self.database.write(unit)
        return record

    def _sealed_arguments(self, record: TaskRecord) -> Any:
        """A sealed run's task arguments are stored sealed under its key."""
        key = self.keyring.held(record.run_id)
        if key is None:
            return record.arguments
        return seal(record.arguments, record.run_id, key)

    # -- Hand reports ---------------------------------------------------------------------

    async def accept(self, task_id: str, attempt: int, *, hand_name: str) -> Report:
        return await self._move(
            task_id, attempt, hand_name, (TaskState.OFFERED,), TaskState.ACCEPTED, "accepted"
        )

    async def reject(self, task_id: str, attempt: int, reason: str, *, hand_name: str) -> Report:
        return await self._move(
            task_id,
            attempt,
            hand_name,
            (TaskState.OFFERED,),
            TaskState.REJECTED,
            "rejected by the Hand",
            error=reason,
        )

    async def finish(
        self,
        task_id: str,
        attempt: int,
        result: HandResult,
        *,
        hand_name: str,
        images: Sequence[CheckedImage] = (),
        accepts: bool = False,
    ) -> Report:
        """Record the Hand's result; its `images` (checked) are stored in the same unit. With
        `accepts` (a Hand granted `result_accepts`), a result for a task still offered accepts
        and ends it in that one unit."""
        return await self._move(
            task_id,
            attempt,
            hand_name,
            (TaskState.OFFERED, TaskState.ACCEPTED) if accepts else (TaskState.ACCEPTED,),
            result.state,
            "result from the Hand",
            output=result.output,
            error=result.error,
            images=images,
        )

    async def check_progress(self, task_id: str, attempt: int, *, hand_name: str) -> Report:
        """Whether a progress report fits the task; changes nothing either way."""
        found = await self.database.first(BY_ID, task_id=task_id)
        refusal = self._refusal(found, attempt, hand_name, (TaskState.ACCEPTED,))
        if refusal is not None:
            return refusal
        return Report(AckStatus.OK, self._record(found))

    # -- Mind-side transitions ------------------------------------------------------------

    async def reoffer(self, task_id: str, attempt: int) -> Report:
        """Offer an unanswered task again under a new attempt, fencing off the old one."""
        return await self._move(
            task_id,
            attempt,
            None,
            (TaskState.OFFERED,),
            TaskState.OFFERED,
            "offered again",
            next_attempt=True,
        )

    async def time_out(self, task_id: str, attempt: int, reason: str) -> Report:
        return await self._move(
            task_id, attempt, None, OPEN, TaskState.TIMED_OUT, reason, error=reason
        )

    async def mark_lost(self, task_id: str, attempt: int, reason: str) -> Report:
        return await self._move(task_id, attempt, None, OPEN, TaskState.LOST, reason, error=reason)

    async def fail(self, task_id: str, attempt: int, reason: str) -> Report:
        """End a task the Mind could not deliver (e.g. the offer could not be sent)."""
        return await self._move(
            task_id, attempt, None, OPEN, TaskState.FAILED, reason, error=reason
        )

    async def cancel(self, task_id: str, attempt: int, reason: str) -> Report:
        """End a task the Mind cancelled and the Hand did not confirm in time."""
        return await self._move(
            task_id, attempt, None, OPEN, TaskState.CANCELLED, reason, error=reason
        )

    async def request_cancel(self, task_id: str, reason: str) -> Report:
        """Record a cancel request on an open task (kept when asked twice: first time wins)."""
        now = utcnow()

        def unit(tx: WriteTx) -> Report:
            found = tx.first(BY_ID, task_id=task_id)
            refusal = self._refusal(found, None, None, OPEN)
            if refusal is not None:
                return refusal
            assert found is not None  # refused otherwise
            record = self._record(found)
            if found.cancel_requested_at is None:
                tx.execute(REQUEST_CANCEL, task_id=task_id, now=now, reason=reason)
                record = replace(
                    record, cancel_requested_at=now, cancel_reason=reason, updated_at=now
                )
                if self.signals is not None:
                    self.signals.in_tx(tx, SignalKind.CANCEL, record)
            return Report(AckStatus.OK, record)

        return await self.database.write(unit)

    # -- reads ----------------------------------------------------------------------------

    async def get(self, task_id: str) -> TaskRecord | None:
        found = await self.database.first(BY_ID, task_id=task_id)
        return None if found is None else self._record(found)

    async def for_call(self, tool_call_id: str) -> TaskRecord | None:
        """The task of a tool call (a call has at most one)."""
        found = await self.database.first(BY_CALL, tool_call_id=tool_call_id)
        return None if found is None else self._record(found)

    async def open_tasks(self, hand_name: str | None = None) -> list[TaskRecord]:
        found = await self.database.rows(OPEN_TASKS)
        return [self._record(row) for row in found if hand_name in (None, row.hand_name)]

    async def transitions(self, task_id: str) -> list[Transition]:
        found = await self.database.rows(TRANSITIONS, task_id=task_id)
        return [
            Transition(
                r.task_id, r.attempt, r.from_state, r.to_state, r.terminal, r.detail, r.created_at
            )
            for r in found
        ]

    # -- internals ------------------------------------------------------------------------

    def _refusal(
        self,
        found: Any | None,
        attempt: int | None,
        hand_name: str | None,
        allowed: Iterable[TaskState],
    ) -> Report | None:
        if found is None or (hand_name is not None and found.hand_name != hand_name):
            return Report(AckStatus.UNKNOWN_TASK, None, "no such task was offered to this Hand")
        task = found
        record = self._record(found)
        if record.terminal:
            return Report(
                AckStatus.ALREADY_TERMINAL, record, f"the task already ended {record.state}"
            )
        if attempt is not None and attempt != task.attempt:
            return Report(
                AckStatus.STALE, record, f"attempt {attempt} is stale; current is {task.attempt}"
            )
        if record.state not in tuple(allowed):
            return Report(AckStatus.INVALID, record, f"not allowed while the task is {task.state}")
        return None

    def _image_refusal(self, found: Any) -> Report | None:
        """Images stay in `media` after a sealed turn ends, so a sensitive call's result may
        not carry any: what it read must be gone with the turn."""
        if not is_envelope(found.arguments):
            return None
        return Report(
            AckStatus.INVALID,
            self._record(found),
            "a sensitive tool's result cannot carry images: they would outlive its sealed turn; "
            "send the result without them",
        )

    async def _move(
        self,
        task_id: str,
        attempt: int,
        hand_name: str | None,
        allowed: tuple[TaskState, ...],
        to_state: TaskState,
        detail: str,
        *,
        output: str | None = None,
        error: str | None = None,
        next_attempt: bool = False,
        images: Sequence[CheckedImage] = (),
    ) -> Report:
        """Check and apply one transition in a single unit; refusals are committed no-ops."""
        now = utcnow()

        def unit(tx: WriteTx) -> Report:
            found = tx.first(BY_ID, task_id=task_id)
            refusal = self._refusal(found, attempt, hand_name, allowed)
            if refusal is None and images:
                refusal = self._image_refusal(found)
            if refusal is not None:
                return refusal
            assert found is not None  # refused otherwise
            values: dict[str, Any] = {
                "state": to_state.value,
                "attempt": attempt + 1 if next_attempt else attempt,
                "updated_at": now,
            }
            stored = dict(values)
            if output is not None:
                values["output"] = output
                stored["output"] = self._sealed_text(found, output)
            if error is not None:
                values["error"] = error
                stored["error"] = self._sealed_text(found, error)
            if images:
                store_images(tx.session, images)
                stored["images"] = [image.ref() for image in images]
                values["images"] = tuple(stored["images"])
            changed = tx.execute(
                move_statement(tuple(stored)),
                task_id=task_id,
                from_state=found.state,
                from_attempt=attempt,
                **stored,
            )
            if changed != 1:
                raise _LostRace
            tx.insert_values(
                TaskTransition,
                {
                    "task_id": task_id,
                    "attempt": values["attempt"],
                    "from_state": found.state,
                    "to_state": to_state.value,
                    "terminal": to_state.terminal,
                    "detail": detail,
                    "created_at": now,
                },
            )
            moved = replace(self._record(found), **{**values, "state": to_state})
            if self.signals is not None:
                self.signals.in_tx(tx, SignalKind.CHANGE, moved)
            return Report(AckStatus.OK, moved)

        try:
            report = await self.database.write(unit)
        except _LostRace:
            return await self._classify_after_race(task_id, attempt, hand_name, allowed, to_state)
        except IntegrityError:
            # The partial unique index refused a second terminal committed by a racing writer.
            log.warning("task %s: refused a second terminal %s (race)", task_id, to_state)
            return await self._classify_after_race(task_id, attempt, hand_name, allowed, to_state)
        if not report.applied:
            self._log_refusal(report, task_id, attempt, to_state)
        return report

    async def _classify_after_race(
        self,
        task_id: str,
        attempt: int,
        hand_name: str | None,
        allowed: tuple[TaskState, ...],
        to_state: TaskState,
    ) -> Report:
        found = await self.database.first(BY_ID, task_id=task_id)
        refusal = self._refusal(found, attempt, hand_name, allowed)
        if refusal is None:
            # Still applicable after losing a race means another writer moved it and back;
            # the caller may retry, but nothing was changed by this call.
            return Report(AckStatus.STALE, self._record(found), "lost a concurrent update")
        self._log_refusal(refusal, task_id, attempt, to_state)
        return refusal

    @staticmethod
    def _log_refusal(refusal: Report, task_id: str, attempt: int, to_state: TaskState) -> None:
        if refusal.status is AckStatus.ALREADY_TERMINAL and to_state.terminal:
            log.warning(
                "task %s attempt %s: conflict, %s refused: %s",
                task_id,
                attempt,
                to_state,
                refusal.message,
            )
        else:
            log.info(
                "task %s attempt %s: %s refused (%s): %s",
                task_id,
                attempt,
                to_state,
                refusal.status,
                refusal.message,
            )


class _LostRace(Exception):
    """The compare-and-set matched no row: another writer changed the task first."""
