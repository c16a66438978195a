"""Typed views of initiative: pending and scheduled actions, their plans, triggers, firings.

Like `mind.events.views`: each mirrors one `tobe.v1` message field for field (converted by
`mind.wire.convert_actions`) and has an explicit JSON form for its durable event
(`to_payload`, `from_payload`): keys are the field names, enumerations the store's lowercase
words, timestamps ISO-8601 strings ("" for none). A `TriggerView` payload is also what the
decision layer's Evaluator answers and what the store keeps (`pending_actions.trigger`,
`scheduled_actions.trigger`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

Payload = dict[str, Any]


class ActionTiming(StrEnum):
    IMMEDIATE = "immediate"
    PLANNED = "planned"


class PendingState(StrEnum):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    CANCELLED = "cancelled"
    AMENDED = "amended"
    EXPIRED = "expired"


class ScheduleState(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    FINISHED = "finished"
    DELETED = "deleted"


class FiringOutcome(StrEnum):
    RUNNING = "running"
    SENT = "sent"
    SKIPPED = "skipped"
    FAILED = "failed"
    ABORTED = "aborted"


class TriggerKind(StrEnum):
    AT = "at"
    INTERVAL = "interval"
    CRON = "cron"
    OBSERVATION = "observation"
    MEMORY = "memory"


def _iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else ""


def _moment(text: str) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


@dataclass(frozen=True)
class PlanStepView:
    """One meta-action of a plan, with the earlier steps (by `order`) it strictly needs."""

    order: int
    action: str
    purpose: str
    after: tuple[int, ...] = ()

    def to_payload(self) -> Payload:
        return {
            "order": self.order,
            "action": self.action,
            "purpose": self.purpose,
            "after": list(self.after),
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> PlanStepView:
        return cls(
            int(payload["order"]),
            str(payload["action"]),
            str(payload.get("purpose", "")),
            tuple(int(order) for order in payload.get("after", ())),
        )


@dataclass(frozen=True)
class TriggerView:
    """When a scheduled action fires; only the fields of its `kind` are set."""

    kind: TriggerKind
    time_zone: str
    at: datetime | None = None
    every_seconds: int = 0
    start_at: datetime | None = None
    cron: str = ""
    adapter: str = ""
    observation_kind: str = ""
    match: str = ""
    memory_key: str = ""

    def to_payload(self) -> Payload:
        return {
            "kind": self.kind.value,
            "time_zone": self.time_zone,
            "at": _iso(self.at),
            "every_seconds": self.every_seconds,
            "start_at": _iso(self.start_at),
            "cron": self.cron,
            "adapter": self.adapter,
            "observation_kind": self.observation_kind,
            "match": self.match,
            "memory_key": self.memory_key,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> TriggerView:
        return cls(
            kind=TriggerKind(payload["kind"]),
            time_zone=str(payload.get("time_zone", "")),
            at=_moment(payload.get("at", "")),
            every_seconds=int(payload.get("every_seconds", 0)),
            start_at=_moment(payload.get("start_at", "")),
            cron=str(payload.get("cron", "")),
            adapter=str(payload.get("adapter", "")),
            observation_kind=str(payload.get("observation_kind", "")),
            match=str(payload.get("match", "")),
            memory_key=str(payload.get("memory_key", "")),
        )


@dataclass(frozen=True)
class PendingActionView:
    id: str
    conversation_key: str
    title: str
    goal: str
    state: PendingState
    timing: ActionTiming
    plan: tuple[PlanStepView, ...]
    trigger: TriggerView | None
    reason: str
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None = None
    outcome: str = ""

    def to_payload(self) -> Payload:
        return {
            "id": self.id,
            "conversation_key": self.conversation_key,
            "title": self.title,
            "goal": self.goal,
            "state": self.state.value,
            "timing": self.timing.value,
            "plan": [step.to_payload() for step in self.plan],
            "trigger": self.trigger.to_payload() if self.trigger is not None else None,
            "reason": self.reason,
            "created_at": _iso(self.created_at),
            "expires_at": _iso(self.expires_at),
            "decided_at": _iso(self.decided_at),
            "outcome": self.outcome,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> PendingActionView:
        trigger = payload.get("trigger")
        return cls(
            id=payload["id"],
            conversation_key=payload["conversation_key"],
            title=payload.get("title", ""),
            goal=payload.get("goal", ""),
            state=PendingState(payload["state"]),
            timing=ActionTiming(payload["timing"]),
            plan=tuple(PlanStepView.from_payload(step) for step in payload.get("plan", ())),
            trigger=TriggerView.from_payload(trigger) if trigger else None,
            reason=payload.get("reason", ""),
            created_at=datetime.fromisoformat(payload["created_at"]),
            expires_at=datetime.fromisoformat(payload["expires_at"]),
            decided_at=_moment(payload.get("decided_at", "")),
            outcome=payload.get("outcome", ""),
        )


@dataclass(frozen=True)
class FiringView:
    id: int
    schedule_id: str
    due_at: datetime
    claimed_at: datetime
    outcome: FiringOutcome
    run_id: str = ""
    detail: str = ""

    def to_payload(self) -> Payload:
        return {
            "id": self.id,
            "schedule_id": self.schedule_id,
            "due_at": _iso(self.due_at),
            "claimed_at": _iso(self.claimed_at),
            "outcome": self.outcome.value,
            "run_id": self.run_id,
            "detail": self.detail,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> FiringView:
        return cls(
            id=int(payload["id"]),
            schedule_id=payload["schedule_id"],
            due_at=datetime.fromisoformat(payload["due_at"]),
            claimed_at=datetime.fromisoformat(payload["claimed_at"]),
            outcome=FiringOutcome(payload["outcome"]),
            run_id=payload.get("run_id", ""),
            detail=payload.get("detail", ""),
        )


@dataclass(frozen=True)
class ScheduledActionView:
    id: str
    conversation_key: str
    title: str
    goal: str
    plan: tuple[PlanStepView, ...]
    trigger: TriggerView
    state: ScheduleState
    next_fire_at: datetime | None
    created_at: datetime
    firing_count: int = 0
    last_firing: FiringView | None = None
    catch_up: bool = False

    def to_payload(self) -> Payload:
        return {
            "id": self.id,
            "conversation_key": self.conversation_key,
            "title": self.title,
            "goal": self.goal,
            "plan": [step.to_payload() for step in self.plan],
            "trigger": self.trigger.to_payload(),
            "state": self.state.value,
            "next_fire_at": _iso(self.next_fire_at),
            "created_at": _iso(self.created_at),
            "firing_count": self.firing_count,
            "last_firing": self.last_firing.to_payload() if self.last_firing else None,
            "catch_up": self.catch_up,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> ScheduledActionView:
        last = payload.get("last_firing")
        return cls(
            id=payload["id"],
            conversation_key=payload["conversation_key"],
            title=payload.get("title", ""),
            goal=payload.get("goal", ""),
            plan=tuple(PlanStepView.from_payload(step) for step in payload.get("plan", ())),
            trigger=TriggerView.from_payload(payload["trigger"]),
            state=ScheduleState(payload["state"]),
            next_fire_at=_moment(payload.get("next_fire_at", "")),
            created_at=datetime.fromisoformat(payload["created_at"]),
            firing_count=int(payload.get("firing_count", 0)),
            last_firing=FiringView.from_payload(last) if last else None,
            catch_up=bool(payload.get("catch_up", False)),
        )
