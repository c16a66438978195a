"""One actor per conversation: accepts messages, runs them one run at a time, cancels.

The actor's state lock serialises decisions (start a run now, or queue; which input runs
next); the mutation lease serialises mutations of the conversation (runs, later compaction).
Queued inputs live in the store, so a restart picks them up again in order.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from mind.conversation import continuation, inputs, runs
from mind.conversation.errors import ShuttingDown, WrongState
from mind.conversation.journal import RunRecorder
from mind.conversation.lease import MutationLease
from mind.conversation.records import history_message
from mind.conversation.storage import Storage, WriteTx
from mind.core.history import HistoryMessage
from mind.core.loop import AgentCore, RunOutcome
from mind.events.bus import EphemeralEvent
from mind.store import models
from mind.tools.base import DetailMode
from mind.tools.runtime import RunScope

log = logging.getLogger(__name__)

RUN_HOLDER = "run"


@dataclass(frozen=True)
class ChatInput:
    principal: str
    text: str
    idempotency_key: str
    steer: bool
    mode: str
    # Non-person inputs (observations): delivered as a note; its run carries `permissions`.
    source: dict[str, Any] = field(default_factory=dict)


def run_origin(source: dict[str, Any], default: str) -> tuple[str, dict[str, Any]]:
    """(trigger, permissions) of a run started by an input with this source."""
    if source.get("kind") == "observation":
        return f"observation:{source.get('trust', '')}", dict(source.get("permissions", {}))
    return default, {}


@dataclass(frozen=True)
class SendResult:
    input_id: int
    message_id: int
    run_id: str
    queued: bool
    duplicate: bool


@dataclass
class ActiveRun:
    run_id: str
    principal: str
    mode: str
    task: asyncio.Task[None] | None = None
    # Set by cancel/stop before the task is cancelled: (state, reason) to record.
    stop_as: tuple[str, str] = ("cancelled", "cancelled by the user")
    steer_waiting: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)
    # Continuation run: the approval-gated tool call whose batch it finishes first.
    resume_call: str = ""
    permissions: dict[str, bool] = field(default_factory=dict)


class ConversationActor:
    def __init__(self, key: str, audience: list[str], storage: Storage, core: AgentCore) -> None:
        self.key = key
        self.audience = audience
        self.storage = storage
        self.core = core
        self.lease = MutationLease()
        self._lock = asyncio.Lock()
        self._run: ActiveRun | None = None
        self._closing = False
        # Open tool calls of interrupted runs waiting for their continuation run.
        self._resumes: list[str] = []

    async def submit(self, chat: ChatInput) -> SendResult:
        """Accept a user message: start a run with it, or queue it. Idempotent per key.

        One write transaction: the idempotency check, the decision and the new rows commit
        together, before the caller is answered.
        """
        async with self._lock:
            started: models.Run | None = None
            async with self.storage.write() as tx:
                existing = await inputs.find(tx.session, self.key, chat.idempotency_key)
                if existing is not None:
                    return SendResult(
                        existing.id, existing.message_id or 0, existing.run_id or "",
                        existing.state == "queued", True,
                    )
                if self._closing:
                    raise ShuttingDown("the Mind is shutting down; send again after it restarts")
                idle = self._run is None and not self.lease.held
                if idle and await inputs.oldest_queued(tx.session, self.key) is None:
                    trigger, permissions = run_origin(chat.source, "user")
                    started = await runs.start(
                        tx, key=self.key, trigger=trigger, mode=chat.mode, audience=self.audience,
                        permissions=permissions,
                    )
                    row = await inputs.accept(
                        tx, key=self.key, principal=chat.principal, text=chat.text,
                        idempotency_key=chat.idempotency_key, steer=chat.steer, mode=chat.mode,
                        source=chat.source,
                    )
                    message = await inputs.deliver(tx, row, started.id, self.audience)
                else:
                    row = await self._enqueue(tx, chat)
            if started is not None:
                self._launch(started, chat.principal)
                return SendResult(row.id, message.id, started.id, False, False)
            active = self._run
            if active is not None and chat.steer:
                active.steer_waiting = True
                return SendResult(row.id, 0, active.run_id, True, False)
            if active is None:
                await self._start_next()  # the lease was free but older inputs were waiting
            return SendResult(row.id, 0, "", True, False)

    async def cancel(self) -> str:
        async with self._lock:
            run = self._run
            if run is None or run.task is None:
                raise WrongState(f"conversation {self.key} has no active run to cancel")
            run.stop_as = ("cancelled", "cancelled by the user")
            run.task.cancel()
        await run.done.wait()
        return run.run_id

    async def drain(self) -> None:
        """Start the next queued input's run when idle (after a restart or a lease release)."""
        async with self._lock:
            await self._start_next()

    async def continue_call(self, tool_call_id: str) -> None:
        """Continue an interrupted run whose open call can continue (now, or after the active
        run); see `mind.conversation.continuation`."""
        async with self._lock:
            if tool_call_id not in self._resumes:
                self._resumes.append(tool_call_id)
            await self._start_next()

    async def stop(self, reason: str) -> None:
        """Refuse new messages, end the active run as interrupted, and wait for it."""
        async with self._lock:
            self._closing = True
            run = self._run
            if run is None or run.task is None:
                return
            run.stop_as = ("interrupted", reason)
            run.task.cancel()
        await run.done.wait()

    async def _enqueue(self, tx: WriteTx, chat: ChatInput) -> models.Input:
        active = self._run
        return await inputs.enqueue(
            tx, key=self.key, principal=chat.principal, text=chat.text,
            idempotency_key=chat.idempotency_key, steer=chat.steer, mode=chat.mode,
            active_run_id=active.run_id if active else "", audience=self.audience,
            source=chat.source,
        )

    async def _start_next(self) -> None:
        if self._run is not None or self.lease.held or self._closing:
            return
        while self._resumes:
            tool_call_id = self._resumes.pop(0)
            async with self.storage.write() as tx:
                origin = await continuation.origin_of(tx.session, tool_call_id)
                if origin is None:
                    continue
                run = await runs.start(
                    tx, key=self.key, trigger=origin.trigger, mode=origin.detail_mode,
                    audience=self.audience, permissions=origin.permissions,
                )
            self._launch(run, origin.principal, resume_call=tool_call_id)
            return
        # Only this actor, under its lock, queues inputs of this conversation: an empty queue
        # seen by a read stays empty, so the usual case writes nothing.
        async with self.storage.read() as session:
            if await inputs.oldest_queued(session, self.key) is None:
                return
        async with self.storage.write() as tx:
            row = await inputs.oldest_queued(tx.session, self.key)
            if row is None:
                return
            trigger, permissions = run_origin(row.source, "followup")
            run = await runs.start(
                tx, key=self.key, trigger=trigger, mode=row.detail_mode, audience=self.audience,
                permissions=permissions,
            )
            await inputs.deliver(tx, row, run.id, self.audience)
        self._launch(run, row.principal)

    def _launch(self, run: models.Run, principal: str, resume_call: str = "") -> None:
        if not self.lease.try_acquire(RUN_HOLDER):
            raise RuntimeError(f"{self.key}: mutation lease held by {self.lease.holder}")
        active = ActiveRun(
            run_id=run.id, principal=principal, mode=run.detail_mode, resume_call=resume_call,
            permissions=dict(run.permissions),
        )
        self._run = active
        active.task = asyncio.create_task(self._execute(active), name=f"run {run.id}")

    async def _execute(self, active: ActiveRun) -> None:
        state, reason, outcome = "failed", "", None
        try:
            outcome = await self._run_core(active)
            state, reason = outcome.state, outcome.reason
        except asyncio.CancelledError:
            state, reason = active.stop_as
        except Exception as exc:  # a bug must still end the run with a terminal
            log.exception("run %s crashed", active.run_id)
            state, reason = "failed", f"internal error: {type(exc).__name__}"
        await asyncio.shield(self._finish(active, state, reason, outcome))

    async def _finish(
        self, active: ActiveRun, state: str, reason: str, outcome: RunOutcome | None
    ) -> None:
        usage = None
        if outcome is not None:
            usage = {
                "input_tokens": outcome.usage.input_tokens,
                "output_tokens": outcome.usage.output_tokens,
                "cached_tokens": outcome.usage.cached_tokens,
            }
        try:
            async with self.storage.write() as tx:
                # A stop leaves calls waiting for an approval open, as a crash would; the next
                # start continues them once decided.
                keep_open = (
                    await continuation.open_call_ids(tx.session, active.run_id)
                    if state == "interrupted"
                    else ()
                )
                await runs.finish(
                    tx, active.run_id, state=state, reason=reason, audience=self.audience,
                    steps=outcome.steps if outcome else None, usage=usage, keep_open=keep_open,
                )
        finally:
            async with self._lock:
                self._run = None
                self.lease.release(RUN_HOLDER)
                active.done.set()
                await self._start_next()

    async def _run_core(self, active: ActiveRun) -> RunOutcome:
        history = await self._history()
        recorder = RunRecorder(
            self.storage,
            conversation_key=self.key,
            run_id=active.run_id,
            mode=active.mode,
            audience=self.audience,
            steer_waiting=lambda: active.steer_waiting,
            on_steers_taken=lambda: setattr(active, "steer_waiting", False),
        )
        scope = RunScope(
            conversation_key=self.key,
            run_id=active.run_id,
            principal=active.principal,
            detail_mode=DetailMode(active.mode),
            journal=recorder,
            report_progress=lambda call_id, message, fraction: self._publish(
                "tool_progress", active.run_id, text=message, tool_call_id=call_id,
                fraction=-1.0 if fraction is None else fraction,
            ),
            permissions=active.permissions,
        )

        def on_delta(kind: str, step: int, text: str) -> None:
            if kind == "thinking" and active.mode != DetailMode.TRANSPARENT:
                return
            self._publish(f"{kind}_delta", active.run_id, step=step, text=text)

        if active.resume_call:
            history.extend(
                await continuation.finish_batch(
                    self.core.runtime, self.core.registry, scope, history, active.resume_call,
                    tool_wait=continuation.HAND_RECONNECT_WAIT,
                )
            )
            if not continuation.batch_is_last(history, active.resume_call):
                return RunOutcome(state="completed", reason="later messages followed the batch")
        return await self.core.run(scope, history, recorder, on_delta)

    async def _history(self) -> list[HistoryMessage]:
        async with self.storage.read() as session:
            rows = await session.scalars(
                select(models.Message)
                .where(models.Message.conversation_key == self.key)
                .order_by(models.Message.id)
            )
            return [history_message(row) for row in rows]

    def _publish(self, kind: str, run_id: str, **fields: object) -> None:
        self.storage.bus.publish(
            EphemeralEvent(
                kind=kind,  # type: ignore[arg-type]
                conversation_key=self.key,
                audience=tuple(self.audience),
                run_id=run_id,
                time=datetime.now(UTC),
                **fields,  # type: ignore[arg-type]
            )
        )
