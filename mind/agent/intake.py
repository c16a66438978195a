"""Queue and submit: how an input reaches a conversation, and what holds the lease next.

An input starts a run at once when nothing holds the lease and nothing waits; else it waits
in the store, in order. When the lease is free (`_start_next`), a requested compaction goes
first, then the continuation of an open call, then the queue: posts at its head become their
messages, and the first other input starts a run (a person waiting behind a firing first).
How a run starts depends on what the input came from: one `match` in `_start_with`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from mind.agent import proactive
from mind.agent.actor_state import (
    COMPACTION_HOLDER,
    ActorState,
    ChatInput,
    RunStart,
    SendResult,
)
from mind.conversation import continuation, inputs, origins, runs
from mind.conversation.errors import ShuttingDown
from mind.conversation.media import store_images
from mind.conversation.sources import (
    DecisionSource,
    FiringSource,
    InputSource,
    ObservationSource,
    PersonSource,
    PostSource,
    from_json,
    from_person,
)
from mind.errors import WrongState
from mind.events.views import CompactionTrigger, CompactionView, RunState
from mind.scheduler import records as schedule_records
from mind.store import models
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode
from mind.usage import attribution as usage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Accepted:
    """A new input: started with `run` (delivered as message `message_id`), or queued."""

    input_id: int
    run: models.Run | None = None
    message_id: int = 0


def _duplicate(existing: Any) -> SendResult:
    """The answer to a retry: what the input sent first with its key became."""
    return SendResult(
        existing.id,
        existing.message_id or 0,
        existing.run_id or "",
        existing.state == "queued",
        True,
    )


class Intake(ActorState):
    """Accepts inputs and posts, and starts what waits whenever the lease comes free."""

    async def _submit(self, chat: ChatInput) -> SendResult:
        async with self._lock:
            closing = self._closing
            idle = self._run is None and not self.lease.held
            active_run_id = self._run.run_id if self._run is not None else ""

            def unit(tx: WriteTx) -> SendResult | _Accepted:
                existing = inputs.find(tx, self.key, chat.idempotency_key)
                if existing is not None:
                    return _duplicate(existing)
                if closing:
                    raise ShuttingDown("the Mind is shutting down; send again after it restarts")
                store_images(tx.session, chat.images)
                for item in chat.forwarded:
                    store_images(tx.session, item.images)
                images = [image.ref() for image in chat.images]
                reply_to = chat.reply_to or None
                forwarded = [item.ref() for item in chat.forwarded]
                if idle and inputs.oldest_queued(tx, self.key) is None:
                    run = self._start_with(tx, chat.source, "user", chat.mode)
                    row = inputs.accept(
                        tx,
                        key=self.key,
                        principal=chat.principal,
                        text=chat.text,
                        idempotency_key=chat.idempotency_key,
                        steer=chat.steer,
                        mode=chat.mode,
                        source=chat.source,
                        images=images,
                        reply_to=reply_to,
                        forwarded=forwarded,
                    )
                    message = inputs.deliver(tx, row, run.id, self.audience)
                    if chat.also is not None:
                        chat.also(tx, run.id)
                    return _Accepted(row.id, run, message.id)
                row = inputs.enqueue(
                    tx,
                    key=self.key,
                    principal=chat.principal,
                    text=chat.text,
                    idempotency_key=chat.idempotency_key,
                    steer=chat.steer,
                    mode=chat.mode,
                    active_run_id=active_run_id,
                    audience=self.audience,
                    source=chat.source,
                    images=images,
                    reply_to=reply_to,
                    forwarded=forwarded,
                )
                if chat.also is not None:
                    chat.also(tx, "")
                return _Accepted(row.id)

            accepted = await self.database.write(unit)
            if isinstance(accepted, SendResult):
                return accepted
            if accepted.run is None:
                self._maybe_queued = True
            else:
                self._launch(accepted.run, chat.principal, start=RunStart(chat.text, chat.source))
                return SendResult(
                    accepted.input_id, accepted.message_id, accepted.run.id, False, False
                )
            active = self._run
            if active is not None and active.proactive is not None and from_person(chat.source):
                # A person's message comes first: the proactive run ends, and `_start_next`
                # delivers this message before any firing queued ahead of it.
                active.stop_as = (RunState.CANCELLED, proactive.ABORTED_BY_MESSAGE)
                if active.task is not None:
                    active.task.cancel()
            elif active is not None and chat.steer:
                active.steer_waiting = True
                return SendResult(accepted.input_id, 0, active.run_id, True, False)
            if active is None:
                await self._start_next()  # the lease was free but older inputs were waiting
            return SendResult(accepted.input_id, 0, "", True, False)

    async def _post(
        self,
        text: str,
        idempotency_key: str,
        posted_by: str,
        widget: dict[str, Any] | None = None,
    ) -> SendResult:
        async with self._lock:
            closing = self._closing
            idle = self._run is None and not self.lease.held

            def unit(tx: WriteTx) -> SendResult:
                existing = inputs.find(tx, self.key, idempotency_key)
                if existing is not None:
                    return _duplicate(existing)
                if closing:
                    raise ShuttingDown("the Mind is shutting down; post again after it restarts")
                now = idle and inputs.oldest_queued(tx, self.key) is None
                row = inputs.accept(
                    tx,
                    key=self.key,
                    principal=posted_by,
                    text=text,
                    idempotency_key=idempotency_key,
                    steer=False,
                    mode=DetailMode.SUMMARY.value,
                    source=PostSource(posted_by, widget),
                )
                if not now:
                    return SendResult(row.id, 0, "", True, False)
                message = inputs.deliver_post(tx, row, self.audience)
                return SendResult(row.id, message.id, "", False, False)

            result = await self.database.write(unit)
            if result.queued and not result.duplicate:
                self._maybe_queued = True
                if idle:
                    await self._start_next()  # the lease was free but older inputs were waiting
            return result

    async def _request_compaction(self) -> asyncio.Future[CompactionView]:
        """Queue a requested compaction before the next queued input; its answer to await."""
        async with self._lock:
            if self._closing:
                raise ShuttingDown("the Mind is shutting down; compact again after it restarts")
            if self.core.compaction is None:
                raise WrongState("compaction is not available: the model has no known window")
            answer: asyncio.Future[CompactionView] = asyncio.get_running_loop().create_future()
            self._compactions.append(answer)
            await self._start_next()
        return answer

    def _launch_compaction(self) -> None:
        if not self.lease.try_acquire(COMPACTION_HOLDER):
            raise RuntimeError(f"{self.key}: mutation lease held by {self.lease.holder}")
        waiting, self._compactions = self._compactions, []
        asyncio.create_task(self._compact(waiting), name=f"compact {self.key}")

    async def _compact(self, waiting: list[asyncio.Future[CompactionView]]) -> None:
        """One compaction answers every request that waited for it."""
        engine = self.core.compaction
        assert engine is not None
        try:
            with usage.attributed(self.key, principal=self.settings.owner):
                compacted = await engine.compact(
                    self.key,
                    self.audience,
                    trigger=CompactionTrigger.REQUESTED,
                    fixed_tokens=self.core.fixed_tokens(self.key, await self.profile()),
                    protected=frozenset(self._resumes),
                )
        except Exception as exc:  # every waiter gets the refusal; a bug is logged too
            if not isinstance(exc, (WrongState, ShuttingDown)):
                log.warning("compaction of %s failed: %s", self.key, exc)
            for answer in waiting:
                if not answer.done():
                    answer.set_exception(exc)
        else:
            for answer in waiting:
                if not answer.done():
                    answer.set_result(compacted.view)
        finally:
            async with self._lock:
                self.lease.release(COMPACTION_HOLDER)
                await self._start_next()

    async def _drain(self) -> None:
        async with self._lock:
            await self._start_next()

    async def _continue_call(self, tool_call_id: str) -> None:
        async with self._lock:
            if tool_call_id not in self._resumes:
                self._resumes.append(tool_call_id)
            await self._start_next()

    async def _start_next(self) -> None:
        if self._run is not None or self.lease.held or self._closing:
            return
        if self._compactions:
            self._launch_compaction()
            return
        while self._resumes:
            if await self._resume(self._resumes.pop(0)):
                return
        # Only this actor, under its lock, queues inputs of this conversation: an empty queue
        # stays empty until it queues one, so the usual case reads and writes nothing.
        if not self._maybe_queued:
            return
        if await self.database.first(inputs.OLDEST_QUEUED, key=self.key) is None:
            self._maybe_queued = False
            return

        def deliver_next(tx: WriteTx) -> tuple[models.Run, str, RunStart] | None:
            """Posts at the head of the queue become messages; the first input after them
            starts a run."""
            while (row := inputs.oldest_queued(tx, self.key)) is not None:
                source = from_json(row.source)
                if isinstance(source, PostSource):
                    inputs.deliver_post(tx, row, self.audience)
                    continue
                if isinstance(source, FiringSource):
                    # A person waiting behind a firing is answered first.
                    waiting = inputs.queued(tx, self.key)
                    person = next((r for r in waiting if _by_person(r)), None)
                    if person is not None:
                        row, source = person, from_json(person.source)
                run = self._start_with(tx, source, "followup", row.detail_mode)
                inputs.deliver(tx, row, run.id, self.audience)
                return run, row.principal, RunStart(row.text, source)
            return None

        started = await self.database.write(deliver_next)
        if started is None:
            self._maybe_queued = False
        else:
            run, principal, start = started
            self._launch(run, principal, start=start)

    def _start_with(self, tx: WriteTx, source: InputSource, trigger: str, mode: str) -> models.Run:
        """Start a run for an input with this source: an observation's run is triggered by its
        trust and carries its permissions and origin; a firing's is proactive and names its
        run on the firing; any other input's is `trigger`, with none."""
        permissions: dict[str, bool] = {}
        match source:
            case ObservationSource():
                trigger = runs.observation_trigger(source.trust)
                permissions = dict(source.permissions)
            case FiringSource():
                trigger = runs.PROACTIVE_TRIGGER
            case PersonSource() | DecisionSource() | PostSource():
                pass
        run = runs.start(
            tx,
            key=self.key,
            trigger=trigger,
            mode=mode,
            audience=self.audience,
            permissions=permissions,
            origin=origins.describe(source),
        )
        if isinstance(source, FiringSource):
            schedule_records.firing_started(tx, source.firing_id, run.id)
        return run

    async def _resume(self, tool_call_id: str) -> bool:
        """Start the continuation run of an open call; False when the call is no longer open."""

        def unit(tx: WriteTx) -> tuple[models.Run, str] | None:
            origin = continuation.origin_of(tx.session, tool_call_id)
            if origin is None:
                return None
            run = runs.start(
                tx,
                key=self.key,
                trigger=origin.trigger,
                mode=origin.detail_mode,
                audience=self.audience,
                permissions=origin.permissions,
                origin=origin.origin,
            )
            return run, origin.principal

        resumed = await self.database.write(unit)
        if resumed is None:
            return False
        run, principal = resumed
        self._launch(run, principal, resume_call=tool_call_id)
        return True


def _by_person(row: Any) -> bool:
    """Whether a queued input row is a person's message."""
    return isinstance(from_json(row.source), PersonSource)
