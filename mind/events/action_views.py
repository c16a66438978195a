"""Typed views of initiative: actions waiting for confirmation, scheduled actions, their
triggers and firings.

Like `mind.events.views`: each mirrors one `tobe.v1` message under the same names
(`mind.service.convert_actions` converts), and keeps an explicit JSON form for the outbox
(`to_payload`, `from_payload`): enumerations as the store's lowercase words, timestamps as
ISO-8601 strings in UTC ("" for none).
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


def _required_moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


@dataclass(frozen=True)
class PlanStepView:
    """One meta-action of a plan, with the earlier steps it strictly depends on."""

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
        return cls(payload["order"], payload["action"], payload["purpose"], tuple(payload["after"]))


@dataclass(frozen=True)
class TriggerView:
    """When a scheduled action fires: the fields of its `kind` are set, the others empty.

    Instants are aware (UTC once stored); `time_zone` is the IANA zone cron fields and the
    owner's words are read in."""

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

    @property
    def is_condition(self) -> bool:
        return self.kind in (TriggerKind.OBSERVATION, TriggerKind.MEMORY)

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
            time_zone=payload["time_zone"],
            at=_moment(payload["at"]),
            every_seconds=payload["every_seconds"],
            start_at=_moment(payload["start_at"]),
            cron=payload["cron"],
            adapter=payload["adapter"],
            observation_kind=payload["observation_kind"],
            match=payload["match"],
            memory_key=payload["memory_key"],
        )


@dataclass(frozen=True)
class PendingActionView:
    """An action the decision layer planned that waits for its owner's decision."""

    id: str
    conversation_key: str
    title: str
    goal: str
    state: PendingState
    timing: ActionTiming
    plan: tuple[PlanStepView, ...]
    # Set for a planned action.
    trigger: TriggerView | None
    reason: str
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None
    outcome: str

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
        trigger = payload["trigger"]
        return cls(
            id=payload["id"],
            conversation_key=payload["conversation_key"],
            title=payload["title"],
            goal=payload["goal"],
            state=PendingState(payload["state"]),
            timing=ActionTiming(payload["timing"]),
            plan=tuple(PlanStepView.from_payload(step) for step in payload["plan"]),
            trigger=TriggerView.from_payload(trigger) if trigger else None,
            reason=payload["reason"],
            created_at=_required_moment(payload["created_at"]),
            expires_at=_required_moment(payload["expires_at"]),
            decided_at=_moment(payload["decided_at"]),
            outcome=payload["outcome"],
        )


@dataclass(frozen=True)
class FiringView:
    """One firing of a scheduled action and, once its run ended, its outcome."""

    id: int
    schedule_id: str
    due_at: datetime
    claimed_at: datetime
    outcome: FiringOutcome
    run_id: str
    detail: str

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
            id=payload["id"],
            schedule_id=payload["schedule_id"],
            due_at=_required_moment(payload["due_at"]),
            claimed_at=_required_moment(payload["claimed_at"]),
            outcome=FiringOutcome(payload["outcome"]),
            run_id=payload["run_id"],
            detail=payload["detail"],
        )


@dataclass(frozen=True)
class ScheduledActionView:
    """A durable scheduled action as its conversation's people see it."""

    id: str
    conversation_key: str
    title: str
    goal: str
    plan: tuple[PlanStepView, ...]
    trigger: TriggerView
    state: ScheduleState
    # None for conditions and for actions that will not fire again.
    next_fire_at: datetime | None
    created_at: datetime
    firing_count: int
    last_firing: FiringView | None
    catch_up: bool

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
        last = payload["last_firing"]
        return cls(
            id=payload["id"],
            conversation_key=payload["conversation_key"],
            title=payload["title"],
            goal=payload["goal"],
            plan=tuple(PlanStepView.from_payload(step) for step in payload["plan"]),
            trigger=TriggerView.from_payload(payload["trigger"]),
            state=ScheduleState(payload["state"]),
            next_fire_at=_moment(payload["next_fire_at"]),
            created_at=_required_moment(payload["created_at"]),
            firing_count=payload["firing_count"],
            last_firing=FiringView.from_payload(last) if last else None,
            catch_up=payload["catch_up"],
        )
