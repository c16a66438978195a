"""The decision layer: an input's way to anything that acts.

`DecisionLayer.decide` walks these steps for a run started by a person's message or an
observation note:

1. extract: one call; ordinary chat ends here (read-only tools, no note, no writes);
2. apply the input's answers to pending actions (confirm, cancel, amend);
3. evaluate each tendency (at most `[actions] max_tendencies`; more are refused);
4. plan each one let through, against the meta-actions its timing may use;
5. apply: refused → only the note; needs confirmation → a pending action; immediate → this
   run executes the plan (its selection opens the plan's meta-actions); planned → a
   scheduled action (`mind.scheduler.records.create_schedule`, in the same unit).

`take_up` is the run of a decision made through `Mind.DecideAction`: a confirmed immediate
action executes its stored plan; an amendment is evaluated and planned again. A stage whose
answer stays malformed after its retry ends the decision: the run is plain chat ("no action"
for the person), with no note about it (outcomes applied before it keep their lines); the
operator sees it in the log (WARNING, with the conversation and the stage, never the model's
text) and in `failures`, counted by stage (`tobe admin status`). Steering messages delivered
during a run do not pass the layer: the run keeps the selection its starting input got.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from sqlalchemy.orm import Session

from mind.actions import evaluator, extractor, planner, records
from mind.actions.context import StageContext, recent_lines
from mind.actions.model import (
    Evaluation,
    MetaAction,
    PendingChoice,
    PendingDecision,
    Tendency,
    Verdict,
    meta_actions,
)
from mind.actions.outcomes import Decision, Fate, Outcome
from mind.actions.structured import MalformedAnswer
from mind.conversation.history import HistoryMessage
from mind.errors import NotFound, WrongState
from mind.events.action_views import (
    ActionTiming,
    PendingActionView,
    PendingState,
    PlanStepView,
    ScheduledActionView,
    TriggerView,
)
from mind.memory import store as memory_store
from mind.profiles.model import Profile
from mind.providers.base import Provider
from mind.scheduler import records as schedule_records
from mind.scheduler.clock import SystemClock
from mind.scheduler.model import Clock
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import Tool
from tobe.config import ActionsSettings, SchedulerSettings

log = logging.getLogger(__name__)


class ScheduleCreator(Protocol):
    """Creates a scheduled action in the caller's unit (`mind.scheduler.records`)."""

    def __call__(
        self,
        tx: WriteTx,
        *,
        conversation_key: str,
        owner: str,
        audience: list[str],
        title: str,
        goal: str,
        plan: tuple[PlanStepView, ...],
        trigger: TriggerView,
        source: str,
        now: datetime,
    ) -> ScheduledActionView: ...


def scheduler_create(settings: SchedulerSettings) -> ScheduleCreator:
    """The scheduler's `create_schedule` with this Mind's `[scheduler]` choices: the scheduler
    package owns scheduled actions and this layer only hands them over."""
    return partial(
        schedule_records.create_schedule,
        catch_up=settings.catch_up,
        min_interval=settings.min_interval,
    )


@dataclass(frozen=True)
class Turn:
    """The run the layer decides for."""

    conversation_key: str
    owner: str
    audience: list[str]
    run_id: str
    # The starting input's text.
    text: str
    # The messages before it.
    history: Sequence[HistoryMessage]
    # The tools the conversation's profile offers now.
    tools: dict[str, Tool]
    # Started by an observation whose trust may not change anything (no `workspace_write`):
    # what it would arrange for later waits for the owner's confirmation.
    untrusted: bool = False


class DecisionLayer:
    def __init__(
        self,
        provider: Provider,
        database: Database,
        settings: ActionsSettings,
        scheduler: SchedulerSettings,
        *,
        clock: Clock | None = None,
        schedule: ScheduleCreator | None = None,
    ) -> None:
        self.provider = provider
        self.database = database
        self.settings = settings
        self.scheduler = scheduler
        self.clock: Clock = clock or SystemClock()
        self.schedule = schedule or scheduler_create(scheduler)
        # The Awareness adapters an observation condition may name (`AdapterCatalog.text`);
        # None without Awareness.
        self.adapters: Callable[[], Awaitable[str]] | None = None
        # Stages whose answer stayed unusable after a retry since the start, by stage.
        self.failures: Counter[str] = Counter()

    def enabled_for(self, profile: Profile) -> bool:
        return self.settings.enabled if profile.actions is None else profile.actions

    async def decide(self, turn: Turn) -> Decision:
        """Extract → evaluate → plan for a run's starting input; see the module docstring."""
        context = await self._context(turn)
        outcomes: list[Outcome] = []
        try:
            extraction = await extractor.extract(self.provider, turn.text, context)
            for decision in extraction.pending:
                outcomes.append(await self._answer(turn, context, decision))
            limit = self.settings.max_tendencies
            for tendency in extraction.tendencies[:limit]:
                outcomes.append(await self._through(turn, context, tendency.goal, tendency))
            outcomes += [
                Outcome(Fate.REFUSED, t.goal, reason=f"Too many actions at once (at most {limit}).")
                for t in extraction.tendencies[limit:]
            ]
        except MalformedAnswer as failure:
            return self._failed(turn, failure, outcomes)
        return Decision(tuple(outcomes))

    async def take_up(
        self, turn: Turn, action_id: str, choice: PendingChoice, amendment: str
    ) -> Decision:
        """The run of an owner's decision made outside the chat (`Mind.DecideAction`)."""
        if choice is PendingChoice.CONFIRM:
            action = await self.database.read(
                lambda session: records.view_of(records.find(session, action_id))
            )
            outcome = Outcome(
                Fate.EXECUTING, action.goal, action.title, action_id=action.id, plan=action.plan
            )
            return Decision((outcome,))
        waiting = await self._still_pending(action_id)
        if isinstance(waiting, Outcome):
            return Decision((waiting,))
        action = waiting
        context = await self._context(turn)
        try:
            return Decision((await self._amend(turn, context, action, amendment),))
        except MalformedAnswer as failure:
            return self._failed(turn, failure)
        except WrongState as exc:  # decided meanwhile
            return Decision(
                (Outcome(Fate.STALE, action.goal, action.title, str(exc), action_id=action.id),)
            )

    def _failed(
        self, turn: Turn, failure: MalformedAnswer, done: Sequence[Outcome] = ()
    ) -> Decision:
        """No action for the input: plain chat; what was applied before the failure stays,
        noted. Logged and counted, never shown in the conversation."""
        self.failures[failure.stage] += 1
        log.warning(
            "decision layer: conversation %s, run %s: the %s stage's answer was unusable after "
            "a retry (%s); no action taken, the input is handled as plain chat",
            turn.conversation_key,
            turn.run_id,
            failure.stage,
            failure.category,
        )
        return Decision(tuple(done), failure)

    async def _context(self, turn: Turn) -> StageContext:
        now = self.clock.now()
        key = turn.conversation_key

        def read(session: Session) -> tuple[Any, ...]:
            return (
                records.listing(session, key, pending_only=True),
                schedule_records.list_schedules(session, key, include_ended=False),
                memory_store.listing(session, key).entries,
            )

        waiting, scheduled, memory = await self.database.read(read)
        return StageContext(
            recent=recent_lines(turn.history, self.settings.context_messages),
            now=now,
            time_zone=self.scheduler.zone_of(turn.owner),
            pending=tuple(action for action in waiting if action.expires_at > now),
            scheduled=tuple(scheduled),
            memory=tuple((entry.key, entry.text) for entry in memory),
        )

    async def _answer(
        self, turn: Turn, context: StageContext, decision: PendingDecision
    ) -> Outcome:
        """Apply the input's answer to a pending action."""
        action = await self._still_pending(decision.id)
        if isinstance(action, Outcome):
            return action
        try:
            return await self._take(turn, context, action, decision)
        except WrongState as exc:  # decided meanwhile, through another input or a client
            return Outcome(Fate.STALE, action.goal, action.title, str(exc), action_id=action.id)

    async def _take(
        self,
        turn: Turn,
        context: StageContext,
        action: PendingActionView,
        decision: PendingDecision,
    ) -> Outcome:
        if decision.decision is PendingChoice.AMEND:
            return await self._amend(turn, context, action, decision.amendment)
        if decision.decision is PendingChoice.CANCEL:
            await self.database.write(
                lambda tx: records.decide(tx, action.id, PendingState.CANCELLED, now=self._now())
            )
            return Outcome(Fate.CANCELLED, action.goal, action.title, action_id=action.id)
        return await self._confirm(turn, action)

    async def _still_pending(self, action_id: str) -> PendingActionView | Outcome:
        """The action when it can still be taken up; else the outcome saying why not (an
        action past its time is marked expired now)."""
        now = self._now()
        try:
            expired = await self.database.write(
                lambda tx: records.expire_if_due(tx, action_id, now)
            )
            action = await self.database.read(lambda s: records.view_of(records.find(s, action_id)))
        except NotFound:
            return Outcome(Fate.STALE, "", action_id=action_id, reason="no such action.")
        if expired is not None:
            return Outcome(Fate.EXPIRED, action.goal, action.title, action_id=action_id)
        if action.state is not PendingState.PENDING:
            return Outcome(
                Fate.STALE,
                action.goal,
                action.title,
                action_id=action_id,
                reason=f"already {action.state.value}; nothing changed.",
            )
        return action

    async def _confirm(self, turn: Turn, action: PendingActionView) -> Outcome:
        if action.timing is ActionTiming.IMMEDIATE:
            await self.database.write(
                lambda tx: records.decide(
                    tx, action.id, PendingState.CONFIRMED, now=self._now(), outcome=turn.run_id
                )
            )
            return Outcome(
                Fate.EXECUTING, action.goal, action.title, action_id=action.id, plan=action.plan
            )
        assert action.trigger is not None
        trigger = action.trigger

        def unit(tx: WriteTx) -> ScheduledActionView:
            scheduled = self._create_schedule(
                tx, turn, action.title, action.goal, action.plan, trigger, action.id
            )
            records.decide(
                tx, action.id, PendingState.CONFIRMED, now=self._now(), outcome=scheduled.id
            )
            return scheduled

        scheduled = await self.database.write(unit)
        return Outcome(
            Fate.SCHEDULED,
            action.goal,
            action.title,
            action_id=action.id,
            schedule_id=scheduled.id,
            next_fire_at=scheduled.next_fire_at,
            plan=action.plan,
        )

    async def _amend(
        self, turn: Turn, context: StageContext, action: PendingActionView, amendment: str
    ) -> Outcome:
        """Evaluate and plan the goal with its amendment; the old action ends `amended`, its
        outcome naming what replaced it, in the unit that registers the replacement."""
        goal = f"{action.goal} (amended: {amendment})"
        tendency = Tendency(goal, amendment)
        return await self._through(turn, context, goal, tendency, replaces=action.id)

    async def _through(
        self, turn: Turn, context: StageContext, goal: str, tendency: Tendency, replaces: str = ""
    ) -> Outcome:
        """Evaluate → plan → apply one tendency."""
        available = meta_actions(turn.tools)
        adapters = await self.adapters() if self.adapters is not None else ""
        evaluation = await evaluator.evaluate(
            self.provider, tendency, context, available, self.scheduler.min_interval, adapters
        )
        if turn.untrusted and evaluation.verdict is Verdict.PLANNED:
            evaluation = replace(
                evaluation,
                verdict=Verdict.CONFIRM,
                reason=f"{evaluation.reason} (arranged from an observation whose trust cannot "
                "change anything: it waits for the owner)".lstrip(),
            )
        if evaluation.verdict is Verdict.REFUSED:
            await self._replaced(replaces, "refused")
            return Outcome(Fate.REFUSED, goal, evaluation.title, evaluation.reason)
        if evaluation.timing is ActionTiming.PLANNED:
            refusal = _unschedulable(evaluation, available)
            if refusal:
                await self._replaced(replaces, "refused")
                return Outcome(Fate.REFUSED, goal, evaluation.title, refusal)
            available = tuple(action for action in available if action.schedulable)
        plan = await planner.plan(self.provider, goal, evaluation, context, available)
        return await self._apply(turn, goal, evaluation, plan, replaces)

    async def _apply(
        self,
        turn: Turn,
        goal: str,
        evaluation: Evaluation,
        plan: tuple[PlanStepView, ...],
        replaces: str,
    ) -> Outcome:
        title = evaluation.title
        if evaluation.verdict is Verdict.IMMEDIATE:
            await self._replaced(replaces, turn.run_id)
            return Outcome(Fate.EXECUTING, goal, title, evaluation.reason, plan=plan)
        if evaluation.verdict is Verdict.CONFIRM:
            timing = evaluation.timing
            assert timing is not None

            def register(tx: WriteTx) -> PendingActionView:
                waiting = records.create(
                    tx,
                    conversation_key=turn.conversation_key,
                    owner=turn.owner,
                    run_id=turn.run_id,
                    title=title,
                    goal=goal,
                    timing=timing,
                    plan=plan,
                    trigger=evaluation.trigger,
                    reason=evaluation.reason,
                    now=self._now(),
                    ttl=self.settings.confirmation_ttl,
                )
                self._mark_amended(tx, replaces, waiting.id)
                return waiting

            waiting = await self.database.write(register)
            return Outcome(
                Fate.WAITING, goal, title, evaluation.reason, action_id=waiting.id, plan=plan
            )
        trigger = evaluation.trigger
        assert trigger is not None

        def schedule(tx: WriteTx) -> ScheduledActionView:
            scheduled = self._create_schedule(tx, turn, title, goal, plan, trigger, turn.run_id)
            self._mark_amended(tx, replaces, scheduled.id)
            return scheduled

        scheduled = await self.database.write(schedule)
        return Outcome(
            Fate.SCHEDULED,
            goal,
            title,
            evaluation.reason,
            schedule_id=scheduled.id,
            next_fire_at=scheduled.next_fire_at,
            plan=plan,
        )

    def _create_schedule(
        self,
        tx: WriteTx,
        turn: Turn,
        title: str,
        goal: str,
        plan: tuple[PlanStepView, ...],
        trigger: TriggerView,
        source: str,
    ) -> ScheduledActionView:
        return self.schedule(
            tx,
            conversation_key=turn.conversation_key,
            owner=turn.owner,
            audience=list(turn.audience),
            title=title,
            goal=goal,
            plan=plan,
            trigger=trigger,
            source=source,
            now=self._now(),
        )

    def _mark_amended(self, tx: WriteTx, replaces: str, outcome: str) -> None:
        if replaces:
            records.decide(tx, replaces, PendingState.AMENDED, now=self._now(), outcome=outcome)

    async def _replaced(self, replaces: str, outcome: str) -> None:
        if replaces:
            await self.database.write(lambda tx: self._mark_amended(tx, replaces, outcome))

    def _now(self) -> datetime:
        return self.clock.now()


def _unschedulable(evaluation: Evaluation, available: Sequence[MetaAction]) -> str:
    """Why a planned action cannot be scheduled ("" when it can)."""
    by_name = {action.name: action for action in available}
    changing = [name for name in evaluation.actions if not by_name[name].schedulable]
    if not changing:
        return ""
    return (
        f"A scheduled action fires as a proactive run, which can only read and message you; "
        f"{', '.join(changing)} would change things, so it cannot be scheduled."
    )
