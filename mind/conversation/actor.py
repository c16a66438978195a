"""One actor per conversation: accepts messages, runs them one run at a time, cancels.

The actor's state lock serialises decisions (start a run now, or queue; which input runs
next); the mutation lease serialises mutations of the conversation: runs, and compactions
(a run compacts within itself; a requested compaction takes the lease between runs, before
the next queued input). Queued inputs live in the store, so a restart picks them up again in
order. Posts (`mind.conversation.posts`) join the same queue: appended at once when nothing
holds the lease and nothing waits, else delivered in their turn after the active run ended,
each as its message, without a run; the queue then goes on.

A run whose starting input is a person's message or an observation note first passes the
entry decision layer (`mind.actions`), when the actor has one and it is on for the
conversation's profile: its outcome is stored as a note before the first model step and
narrows the run's tools (`ToolSelection`). The run of an owner's decision on a pending action
(`Mind.DecideAction`) executes or re-plans that action; continuation runs and steering
messages never pass the layer.

The actor keeps the conversation's profile, made once (`ProfileBook.resolve`) and again only
after the profile changed (`set_profile`), and its active Hand, which the Hand tool source
reads on every step: a run's steps read neither from the store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mind.actions.layer import DecisionLayer, Turn
from mind.actions.model import PendingChoice
from mind.actions.outcomes import Decision
from mind.context import records as context_records
from mind.conversation import (
    action_decisions,
    continuation,
    inputs,
    origins,
    posts,
    proactive,
    runs,
)
from mind.conversation.errors import ShuttingDown
from mind.conversation.history import ContextSummary, HistoryMessage
from mind.conversation.images import CheckedImage
from mind.conversation.journal import RunRecorder
from mind.conversation.lease import MutationLease
from mind.conversation.media import digests_of, read_images, store_images
from mind.conversation.messages import append_message
from mind.conversation.proactive import ProactiveRun
from mind.conversation.records import history_message
from mind.conversation.replies import ReplyTexts
from mind.core.loop import AgentCore, RunOutcome
from mind.core.tool_registry import ToolClash
from mind.core.tool_runtime import RunScope
from mind.core.view import ProviderView
from mind.errors import WrongState
from mind.events.action_views import FiringOutcome
from mind.events.bus import EphemeralEvent, EventBus
from mind.events.views import CompactionTrigger, CompactionView
from mind.memory.store import listing as memory_listing
from mind.profiles.book import ProfileBook
from mind.profiles.errors import ProfileError
from mind.profiles.model import DEFAULT_PROFILE, ConversationInfo, Profile
from mind.providers.base import ImagePart
from mind.scheduler import records as schedule_records
from mind.sealing import turns as sealed_turns
from mind.sealing.forms import Sealer, open_message, redacted_history
from mind.sealing.keyring import KeyRing, Queried, replacement
from mind.sealing.sensitivity import sensitive_tools
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode
from mind.tools.selection import ToolSelection

log = logging.getLogger(__name__)

RUN_HOLDER = "run"
COMPACTION_HOLDER = "compaction"


@dataclass(frozen=True)
class ChatInput:
    principal: str
    text: str
    idempotency_key: str
    steer: bool
    mode: str
    # Non-person inputs (observations): delivered as a note; its run carries `permissions`.
    source: dict[str, Any] = field(default_factory=dict)
    # Checked images sent with the text, stored in the unit that accepts the input.
    images: tuple[CheckedImage, ...] = ()
    # Also done in the accepting unit (not for a retry), given the run it started ("" when
    # queued): an owner's decision on a pending action commits with its input.
    also: Callable[[WriteTx, str], None] | None = None


@dataclass(frozen=True)
class RunStart:
    """The input that started a run: what the decision layer reads."""

    text: str
    source: dict[str, Any]


@dataclass(frozen=True)
class SendResult:
    input_id: int
    message_id: int
    run_id: str
    queued: bool
    duplicate: bool


@dataclass(frozen=True)
class _Accepted:
    """A new input: started with `run` (delivered as message `message_id`), or queued."""

    input_id: int
    run: models.Run | None = None
    message_id: int = 0


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
    # None for a continuation run.
    start: RunStart | None = None
    # A firing's run (`mind.conversation.proactive`); None for every other run.
    proactive: ProactiveRun | None = None
    # What started it (`runs.start`): "user", "followup", "schedule", ...
    trigger: str = ""
    # What started it, in a person's words (`mind.conversation.origins`).
    origin: str = ""


def _from_person(source: dict[str, Any]) -> bool:
    """A person's message, or their decision on a pending action (not code, not the world)."""
    return source.get("kind", "") in ("", action_decisions.KIND)


def _duplicate(existing: Any) -> SendResult:
    """The answer to a retry: what the input sent first with its key became."""
    return SendResult(
        existing.id,
        existing.message_id or 0,
        existing.run_id or "",
        existing.state == "queued",
        True,
    )


@dataclass
class ConversationSettings:
    """Who owns the conversation and what it runs with, as stored (`conversations` row)."""

    owner: str = ""
    # "" = the default profile.
    profile: str = ""
    # "" = every Hand of the owner.
    active_hand: str = ""


class ConversationActor:
    def __init__(
        self,
        key: str,
        audience: list[str],
        database: Database,
        core: AgentCore,
        *,
        bus: EventBus,
        replies: ReplyTexts,
        settings: ConversationSettings | None = None,
        profiles: ProfileBook | None = None,
        keyring: KeyRing | None = None,
        decisions: DecisionLayer | None = None,
    ) -> None:
        self.key = key
        # The entry decision layer; without one, every run is offered all its tools.
        self.decisions = decisions
        # The keys of sealed runs; without one, no run is sealed and nothing sealed opens.
        self.keyring = keyring
        self.audience = audience
        self.settings = settings or ConversationSettings()
        # Without a book every run uses the built-in default profile.
        self._profiles = profiles
        self._profile: Profile | None = None
        self.database = database
        self.core = core
        self.bus = bus
        self.replies = replies
        self.lease = MutationLease()
        # The context as last read (`_history`): the latest summary and the messages after
        # it; and that transcript as last rendered for the provider.
        self._summary: ContextSummary | None = None
        self._summary_read = False
        self._transcript: list[HistoryMessage] = []
        # The images of the messages last read, by digest: read once, not on every read.
        self._images: dict[str, ImagePart] = {}
        self._view = ProviderView()
        self._lock = asyncio.Lock()
        self._run: ActiveRun | None = None
        self._closing = False
        # Open tool calls of interrupted runs waiting for their continuation run.
        self._resumes: list[str] = []
        # False once the queue was seen empty, until this actor queues an input (the only
        # way one gets queued); at first unknown (inputs may wait from before a restart).
        self._maybe_queued = True
        # Requested compactions waiting for the lease, each answered with its outcome.
        self._compactions: list[asyncio.Future[CompactionView]] = []

    # The entry points that may start a run are shielded from their caller's cancellation: a
    # unit commits even when its caller is gone, and a run whose start is committed must be
    # launched too (a retried send then gets the same answer, as a duplicate).

    async def submit(self, chat: ChatInput) -> SendResult:
        """Accept a user message: start a run with it, or queue it. Idempotent per key.

        One unit of work: the idempotency check, the decision and the new rows commit
        together, before the caller is answered. The actor's state it decides on is read
        before, under the state lock, which keeps it unchanged until the unit is committed.
        """
        return await asyncio.shield(self._submit(chat))

    async def post(self, text: str, idempotency_key: str, posted_by: str) -> SendResult:
        """Append a message written by code, now or after the active run; see the module
        docstring. Idempotent per key (shared with `submit`); one unit of work, like it."""
        return await asyncio.shield(self._post(text, idempotency_key, posted_by))

    async def drain(self) -> None:
        """Start the next queued input's run when idle (after a restart or a lease release)."""
        await asyncio.shield(self._drain())

    async def continue_call(self, tool_call_id: str) -> None:
        """Continue an interrupted run whose open call can continue (now, or after the active
        run); see `mind.conversation.continuation`."""
        await asyncio.shield(self._continue_call(tool_call_id))

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
                images = [image.ref() for image in chat.images]
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
            if active is not None and active.proactive is not None and _from_person(chat.source):
                # A person's message comes first: the proactive run ends, and `_start_next`
                # delivers this message before any firing queued ahead of it.
                active.stop_as = ("cancelled", proactive.ABORTED_BY_MESSAGE)
                if active.task is not None:
                    active.task.cancel()
            elif active is not None and chat.steer:
                active.steer_waiting = True
                return SendResult(accepted.input_id, 0, active.run_id, True, False)
            if active is None:
                await self._start_next()  # the lease was free but older inputs were waiting
            return SendResult(accepted.input_id, 0, "", True, False)

    async def _post(self, text: str, idempotency_key: str, posted_by: str) -> SendResult:
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
                    source=posts.source(posted_by),
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

    async def cancel(self) -> str:
        async with self._lock:
            run = self._run
            if run is None or run.task is None:
                raise WrongState(f"conversation {self.key} has no active run to cancel")
            run.stop_as = ("cancelled", "cancelled by the user")
            run.task.cancel()
        await run.done.wait()
        return run.run_id

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

    async def compact(self) -> CompactionView:
        """Compact the context now (after the active run, if any; before the next queued
        input). Raises `WrongState` when there is nothing to compact and `CompactionFailed`
        when summarising failed (nothing changed either way), `ShuttingDown` when stopping."""
        async with self._lock:
            if self._closing:
                raise ShuttingDown("the Mind is shutting down; compact again after it restarts")
            if self.core.compaction is None:
                raise WrongState("compaction is not available: the model has no known window")
            answer: asyncio.Future[CompactionView] = asyncio.get_running_loop().create_future()
            self._compactions.append(answer)
            await self._start_next()
        return await answer

    def set_profile(self, name: str) -> None:
        """The conversation now runs with `name`: its next run makes that profile."""
        self.settings.profile = name
        self._profile = None

    async def profile(self) -> Profile:
        """The conversation's profile, made on first use; ProfileError when it cannot run.

        A failure is not kept: the next run tries again (a factory may fail only for a while).
        """
        if self._profile is None:
            if self._profiles is None:
                return DEFAULT_PROFILE
            info = ConversationInfo(self.key, self.settings.owner, self.settings.profile)
            self._profile = await self._profiles.resolve(info)
        return self._profile

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
                if posts.is_post(row.source):
                    inputs.deliver_post(tx, row, self.audience)
                    continue
                if proactive.is_firing(row.source):
                    # A person waiting behind a firing is answered first.
                    person = next((r for r in inputs.queued(tx, self.key) if not r.source), None)
                    row = person or row
                run = self._start_with(tx, row.source, "followup", row.detail_mode)
                inputs.deliver(tx, row, run.id, self.audience)
                return run, row.principal, RunStart(row.text, dict(row.source))
            return None

        started = await self.database.write(deliver_next)
        if started is None:
            self._maybe_queued = False
        else:
            run, principal, start = started
            self._launch(run, principal, start=start)

    def _start_with(
        self, tx: WriteTx, source: dict[str, Any], trigger: str, mode: str
    ) -> models.Run:
        """Start a run for an input with this source: an observation's run is triggered by its
        trust and carries its permissions and origin; a firing's is proactive and names its
        run on the firing; any other input's is `trigger`, with none."""
        permissions: dict[str, Any] = {}
        if source.get("kind") == origins.OBSERVATION:
            trigger = runs.observation_trigger(str(source.get("trust", "")))
            permissions = dict(source.get("permissions", {}))
        elif proactive.is_firing(source):
            trigger = runs.PROACTIVE_TRIGGER
        run = runs.start(
            tx,
            key=self.key,
            trigger=trigger,
            mode=mode,
            audience=self.audience,
            permissions=permissions,
            origin=origins.describe(source),
        )
        if proactive.is_firing(source):
            schedule_records.firing_started(tx, source["firing_id"], run.id)
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

    def _launch(
        self,
        run: models.Run,
        principal: str,
        resume_call: str = "",
        start: RunStart | None = None,
    ) -> None:
        if not self.lease.try_acquire(RUN_HOLDER):
            raise RuntimeError(f"{self.key}: mutation lease held by {self.lease.holder}")
        firing = start is not None and proactive.is_firing(start.source)
        active = ActiveRun(
            run_id=run.id,
            principal=principal,
            mode=run.detail_mode,
            resume_call=resume_call,
            permissions=dict(run.permissions),
            start=start,
            proactive=ProactiveRun.of(start.source) if start is not None and firing else None,
            trigger=run.trigger,
            origin=run.origin,
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
        except ProfileError as exc:  # this conversation's profile cannot run; others can
            log.warning("run %s of %s: %s", active.run_id, self.key, exc)
            state, reason = "failed", str(exc)
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
        run_id, steps = active.run_id, outcome.steps if outcome else None
        # Only a failure is answered: a cancel or a stop was someone's choice; and never a
        # proactive run's, which nobody asked for.
        own = self._profile.error_reply if self._profile is not None else ""
        answered = state == "failed" and active.proactive is None
        error_reply = (own or self.replies.error_reply(self.key)) if answered else ""
        firing = active.proactive

        def unit(tx: WriteTx) -> list[dict[str, str]] | None:
            # A stop leaves calls waiting for an approval open, as a crash would; the next
            # start continues them once decided.
            keep_open = (
                continuation.open_call_ids(tx.session, run_id) if state == "interrupted" else ()
            )
            ended = runs.finish(
                tx,
                run_id,
                state=state,
                reason=reason,
                audience=self.audience,
                steps=steps,
                usage=usage,
                keep_open=keep_open,
            )
            if ended is not None and error_reply:
                posts.append(
                    tx, self.audience, key=self.key, text=error_reply, posted_by=posts.ERROR_REPLY
                )
            if ended is not None and firing is not None:
                if state == "interrupted":
                    # A stop: the firing runs again after the restart, as after a crash.
                    proactive.retry_interrupted(tx, run_id, reason, self.audience)
                elif schedule_records.firing_open(tx, firing.firing_id):
                    outcome, detail = firing.outcome(state, reason)
                    if outcome is FiringOutcome.SENT:
                        firing.post(tx, self.audience, self.key)
                    elif outcome is FiringOutcome.FAILED:
                        firing.tell_failed(tx, self.audience, self.key, detail)
                    schedule_records.end_firing(tx, firing.firing_id, outcome, detail)
            return ended.redaction if ended is not None else None

        try:
            redaction = await self.database.write(unit)
            if redaction and self.keyring is not None:
                self._shredded(run_id, [Queried.from_json(item) for item in redaction])
        finally:
            async with self._lock:
                self._run = None
                self.lease.release(RUN_HOLDER)
                active.done.set()
                await self._start_next()

    def _shredded(self, run_id: str, redaction: list[Queried]) -> None:
        """A sealed run's key is gone: readers render its replacement from now on, and so
        does the transcript kept in memory (which held the run's raw values); the provider
        view renders it again (reading it from the store again would cost every sensitive
        turn the whole conversation)."""
        assert self.keyring is not None
        self.keyring.shred(run_id, redaction)
        text = replacement(redaction)
        self._transcript = [
            redacted_history(message, text) if message.run_id == run_id else message
            for message in self._transcript
        ]
        self._view = ProviderView()

    async def _seal(self, active: ActiveRun, profile: Profile) -> Sealer | None:
        """A sealer when the run can call a sensitive tool (see `mind.sealing`); None, and
        nothing written, otherwise."""
        if self.keyring is None:
            return None
        try:
            tools = self.core.registry.tools_for(self.key, profile)
        except ToolClash:
            return None  # the run ends failed at its first step, naming the clash
        sensitive = sensitive_tools(tools.values())
        if not sensitive:
            return None
        return await sealed_turns.seal_run(self.database, self.keyring, active.run_id, sensitive)

    async def _run_core(self, active: ActiveRun) -> RunOutcome:
        profile = await self.profile()
        sealer = await self._seal(active, profile)
        history = await self._history()
        summary = self._summary
        recorder = RunRecorder(
            self.database,
            conversation_key=self.key,
            run_id=active.run_id,
            mode=active.mode,
            audience=self.audience,
            steer_waiting=lambda: active.steer_waiting,
            on_steers_taken=lambda: setattr(active, "steer_waiting", False),
            sealer=sealer,
        )
        scope = RunScope(
            conversation_key=self.key,
            run_id=active.run_id,
            principal=active.principal,
            detail_mode=DetailMode(active.mode),
            journal=recorder,
            report_progress=lambda call_id, message, fraction: self._publish(
                "tool_progress",
                active.run_id,
                text=message,
                tool_call_id=call_id,
                fraction=-1.0 if fraction is None else fraction,
            ),
            permissions=active.permissions,
            trust=runs.trust_of(active.trigger),
            origin=active.origin,
            audience=self.audience,
            profile=profile,
            sensitive=sealer.sensitive if sealer is not None else {},
        )

        def on_delta(kind: str, step: int, text: str) -> None:
            if kind == "thinking" and active.mode != DetailMode.TRANSPARENT:
                return
            self._publish(f"{kind}_delta", active.run_id, step=step, text=text)

        if active.resume_call:
            history.extend(
                await continuation.finish_batch(
                    self.core.runtime,
                    self.core.registry,
                    scope,
                    history,
                    active.resume_call,
                    tool_wait=continuation.HAND_RECONNECT_WAIT,
                )
            )
            if not continuation.batch_is_last(history, active.resume_call):
                return RunOutcome(state="completed", reason="later messages followed the batch")
            if active.trigger == runs.PROACTIVE_TRIGGER:
                # Its proactive run ended at the crash (its firing runs again, or ended): the
                # result is recorded, and nothing more runs without the firing's narrowed tools.
                return RunOutcome(state="completed", reason="the proactive run had ended")
        selection = await self._decide(active, profile, history)
        protected = frozenset([*self._resumes, active.resume_call]) - {""}
        if active.proactive is not None:
            return await self.core.run(
                scope,
                [*history, *await self._proactive_context(active.run_id)],
                recorder,
                on_delta,
                view=ProviderView(),  # its notes must not join the conversation's rendering
                summary=summary,
                protected=protected,
                selection=active.proactive.selection(),
            )
        return await self.core.run(
            scope,
            history,
            recorder,
            on_delta,
            view=self._view,
            summary=summary,
            protected=protected,
            selection=selection,
        )

    async def _proactive_context(self, run_id: str) -> list[HistoryMessage]:
        """What a proactive run sees after the history: its firing note, then the memory (for
        this run only)."""
        memory = await self.database.read(lambda session: memory_listing(session, self.key))
        notes = await self.database.rows(proactive.RUN_MESSAGES, run_id=run_id)
        now = self.core.clock()
        return [*(history_message(row) for row in notes), proactive.memory_note(memory, now)]

    async def _decide(
        self, active: ActiveRun, profile: Profile, history: list[HistoryMessage]
    ) -> ToolSelection | None:
        """Pass the run's starting input through the decision layer (see the module
        docstring); its note joins `history`. None: the run is offered all its tools."""
        start, layer = active.start, self.decisions
        if layer is None or start is None:
            return None
        kind = start.source.get("kind", "")
        if kind not in ("", "observation", action_decisions.KIND):
            return None
        if kind != action_decisions.KIND and not layer.enabled_for(profile):
            return None
        try:
            tools = self.core.registry.tools_for(self.key, profile)
        except ToolClash:
            return None  # the run ends failed at its first step, naming the clash
        turn = Turn(
            self.key,
            self.settings.owner,
            self.audience,
            active.run_id,
            start.text,
            history[:-1],
            tools,
            untrusted=kind == "observation" and not active.permissions.get("workspace_write"),
        )
        if kind == action_decisions.KIND:
            choice = PendingChoice(start.source["decision"])
            amendment = str(start.source.get("amendment", ""))
            decision = await layer.take_up(turn, start.source["action_id"], choice, amendment)
        else:
            decision = await layer.decide(turn)
        await self._note(active.run_id, decision, history)
        return decision.selection

    async def _note(self, run_id: str, decision: Decision, history: list[HistoryMessage]) -> None:
        """Store the decision's note (when it has one) before the run's first model step."""
        note = decision.note()
        if note is None:
            return
        text, payload = note

        def unit(tx: WriteTx) -> models.Message:
            return append_message(
                tx,
                self.audience,
                key=self.key,
                run_id=run_id,
                role="note",
                text=text,
                payload=payload,
                mode=DetailMode.TRANSPARENT,
            )

        history.append(history_message(await self.database.write(unit)))

    async def _history(self) -> list[HistoryMessage]:
        """The messages after the latest context summary (`_summary`), or all without one.

        Messages are append-only, so where ids follow commit order (SQLite's single writer)
        only the ones after the last seen are read; elsewhere a lower id may still commit
        later, so the messages after the summary are read whole. Either way the history the
        summary covers is never read again."""
        summary = await self._latest_summary()
        floor = summary.through_message_id if summary else 0
        known = self._transcript if self.database.ids_follow_commits else []
        known = [message for message in known if message.id > floor]
        after = known[-1].id if known else floor
        rows = await self.database.rows(context_records.MESSAGES_AFTER, key=self.key, after=after)
        await self._read_images(digests_of(row.payload for row in rows))
        self._summary = summary
        if self.keyring is not None:
            rows = [open_message(row, self.keyring) for row in rows]
        self._transcript = known + [history_message(row, self._images) for row in rows]
        return list(self._transcript)

    async def _read_images(self, wanted: set[str]) -> None:
        """Keep the images of `wanted` (the messages being read), reading only new ones: the
        provider view renders every step, but image bytes come from the store once."""
        kept = {digest: part for digest, part in self._images.items() if digest in wanted}
        missing = wanted - kept.keys()
        if missing:
            kept.update(await self.database.read(lambda session: read_images(session, missing)))
        self._images = kept

    async def _latest_summary(self) -> ContextSummary | None:
        """Read once, then again only when this process committed a newer one: summaries are
        written only by the Mind that holds the store's state lock."""
        engine = self.core.compaction
        generation = self._summary.generation if self._summary else 0
        moved = engine is not None and engine.committed.get(self.key, generation) != generation
        if not self._summary_read or moved:
            self._summary = await context_records.latest_summary(self.database, self.key)
            self._summary_read = True
        return self._summary

    def _publish(self, kind: str, run_id: str, **fields: object) -> None:
        self.bus.publish(
            EphemeralEvent(
                kind=kind,  # type: ignore[arg-type]
                conversation_key=self.key,
                audience=tuple(self.audience),
                run_id=run_id,
                time=datetime.now(UTC),
                **fields,  # type: ignore[arg-type]
            )
        )
