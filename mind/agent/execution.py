"""Run execution: one run of a conversation, from its lease to its outcome.

A run reads the context (the latest summary and the messages after it, kept between runs so
that each run reads only what is new), is sealed when it can call a sensitive tool
(`mind.sealing`), finishes the batch of the call it continues, passes its starting input
through the entry decision layer (`mind.actions`), and runs the agent loop. A child
conversation's run (`delegate`) skips the layer: it calls only the tools its brief names,
within its budget of turns and tokens. A person's
message or an observation note passes the layer when it is on for the profile; an owner's
decision on a pending action always does, and executes or re-plans that action; firings,
continuation runs and steering messages never do. A firing's run sees its own context and
tools (`mind.agent.proactive`).
"""

from __future__ import annotations

import asyncio
import logging

from mind.actions.layer import Turn
from mind.actions.model import PendingChoice
from mind.actions.outcomes import Decision
from mind.agent import batches, proactive
from mind.agent.actor_state import RUN_HOLDER, ActiveRun, ActorState, RunStart
from mind.agent.journal import RunRecorder
from mind.agent.proactive import ProactiveRun
from mind.agent.run_telemetry import run_span
from mind.cluster.errors import LOST_HOLD, LeaseLost
from mind.context import records as context_records
from mind.conversation import delegations, runs
from mind.conversation.history import ContextSummary, HistoryMessage
from mind.conversation.media import digests_of, read_images
from mind.conversation.messages import append_message
from mind.conversation.records import history_message
from mind.conversation.sources import (
    DecisionSource,
    FiringSource,
    ObservationSource,
    PersonSource,
    PostSource,
)
from mind.core.loop import RunLimits, RunOutcome
from mind.core.tool_registry import ToolClash
from mind.core.tool_runtime import RunScope
from mind.core.view import ProviderView
from mind.events.views import RunState
from mind.memory.store import listing as memory_listing
from mind.profiles.errors import ProfileError
from mind.profiles.model import Profile
from mind.sealing import turns as sealed_turns
from mind.sealing.forms import Sealer, open_message
from mind.sealing.sensitivity import sensitive_tools
from mind.store import models
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode
from mind.tools.selection import ToolSelection
from mind.usage import attribution as usage

log = logging.getLogger(__name__)


class RunExecution(ActorState):
    """Launches a started run and runs it to its outcome; `_finish` records that."""

    def _launch(
        self,
        run: models.Run,
        principal: str,
        resume_call: str = "",
        start: RunStart | None = None,
    ) -> None:
        if not self.lease.try_acquire(RUN_HOLDER):
            raise RuntimeError(f"{self.key}: mutation lease held by {self.lease.holder}")
        firing = start.source if start is not None else None
        active = ActiveRun(
            run_id=run.id,
            principal=principal,
            mode=run.detail_mode,
            resume_call=resume_call,
            permissions=dict(run.permissions),
            start=start,
            proactive=ProactiveRun.of(firing) if isinstance(firing, FiringSource) else None,
            trigger=run.trigger,
            origin=run.origin,
        )
        self._run = active
        active.task = asyncio.create_task(self._execute(active), name=f"run {run.id}")

    async def _execute(self, active: ActiveRun) -> None:
        state, reason, outcome = RunState.FAILED, "", None
        with run_span(self.key, active.run_id, active.trigger) as span:
            try:
                with usage.attributed(
                    self.key, run_id=active.run_id, principal=self.settings.owner
                ):
                    outcome = await self._run_core(active)
                state, reason = outcome.state, outcome.reason
            except asyncio.CancelledError:
                state, reason = active.stop_as
            except LeaseLost as exc:  # another Mind owns it now, and resumes what this run left
                log.info("run %s of %s stopped: %s", active.run_id, self.key, exc)
                state, reason = RunState.INTERRUPTED, LOST_HOLD
            except ProfileError as exc:  # this conversation's profile cannot run; others can
                log.warning("run %s of %s: %s", active.run_id, self.key, exc)
                state, reason = RunState.FAILED, str(exc)
            except Exception as exc:  # a bug must still end the run with a terminal
                log.exception("run %s crashed", active.run_id)
                state, reason = RunState.FAILED, f"internal error: {type(exc).__name__}"
            span.ended(state)
            active.scope = None  # no call joins a run being finished
            await asyncio.shield(self._finish(active, state, reason, outcome))

    async def _seal(self, active: ActiveRun, profile: Profile) -> Sealer | None:
        """A sealer when the run can call a sensitive tool (see `mind.sealing`); None, and
        nothing written, otherwise."""
        if self.keyring is None:
            return None
        try:
            tools = self.core.registry.tools_for(self.key, profile)
        except ToolClash:
            return None  # the run ends failed at its first step, naming the clash
        child = self.settings.child
        if child is not None:  # a child never gets a sensitive tool (`mind.agent.delegation`)
            tools = {name: tool for name, tool in tools.items() if name in child.tools}
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
        active.scope = scope

        def on_delta(kind: str, step: int, text: str) -> None:
            if kind == "thinking" and active.mode != DetailMode.TRANSPARENT:
                return
            self._publish(f"{kind}_delta", active.run_id, step=step, text=text)

        if active.resume_call:
            history.extend(
                await batches.finish_batch(
                    self.core.runtime,
                    self.core.registry,
                    scope,
                    history,
                    active.resume_call,
                    tool_wait=batches.HAND_RECONNECT_WAIT,
                )
            )
            if not batches.batch_is_last(history, active.resume_call):
                return RunOutcome(
                    state=RunState.COMPLETED, reason="later messages followed the batch"
                )
            if active.trigger == runs.PROACTIVE_TRIGGER:
                # Its proactive run ended at the crash (its firing runs again, or ended): the
                # result is recorded, and nothing more runs without the firing's narrowed tools.
                return RunOutcome(state=RunState.COMPLETED, reason="the proactive run had ended")
        child = self.settings.child
        selection: ToolSelection | None
        if child is not None:
            # A child run calls only the tools its parent handed on, within its budget.
            selection = ToolSelection(allow=lambda tool: tool.name in child.tools)
        else:
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
            limits=await self._child_limits(),
        )

    async def _child_limits(self) -> RunLimits | None:
        """A child's budget less what its earlier runs spent (None for other runs)."""
        child = self.settings.child
        if child is None:
            return None
        turns, tokens = await self.database.read(lambda s: delegations.spent(s, self.key))
        return RunLimits(child.max_turns, child.max_tokens, turns, tokens)

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
        source = start.source
        match source:
            case DecisionSource():
                pass
            case PersonSource() | ObservationSource():
                if not layer.enabled_for(profile):
                    return None
            case FiringSource() | PostSource():
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
            untrusted=isinstance(source, ObservationSource)
            and not active.permissions.get("workspace_write"),
        )
        if isinstance(source, DecisionSource):
            choice = PendingChoice(source.decision)
            decision = await layer.take_up(turn, source.action_id, choice, source.amendment)
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
