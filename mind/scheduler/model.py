"""What the scheduler hands to the rest of the Mind, and what it asks of it.

A firing is claimed (a `firings` row) in the same unit that moves its action's next due time;
then it is delivered to its conversation (`mind.agent.messages.Messages.deliver_firing`), which
queues an input keyed `firing:<id>`, so delivering twice queues it once. Its proactive run records
the outcome (`mind.scheduler.records.end_firing`); a run a crash interrupted is run again, up
to three attempts (`mind.agent.proactive.retry_interrupted`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from mind.events.action_views import PlanStepView, TriggerView

# What a firing's input is keyed by, before the firing's id.
FIRING_KEY = "firing:"


@dataclass(frozen=True)
class FiringDelivery:
    """One claimed firing, as its conversation gets it."""

    firing_id: int
    schedule_id: str
    conversation_key: str
    owner: str
    title: str
    goal: str
    plan: tuple[PlanStepView, ...]
    trigger: TriggerView
    due_at: datetime
    # For a condition: what matched (the observation entry as JSON, or the memory entry's key
    # and new text); "" for a time trigger.
    matched: str = ""

    @property
    def idempotency_key(self) -> str:
        return f"{FIRING_KEY}{self.firing_id}"


class Clock(Protocol):
    """The scheduler's idea of now (aware, UTC)."""

    def now(self) -> datetime: ...


class DeadlineSource(Protocol):
    """Other deadlines the scheduler's loop keeps (pending confirmations expiring)."""

    async def next_deadline(self) -> datetime | None:
        """The earliest moment `run_due` has something to do; None: nothing pending."""
        ...

    async def run_due(self, now: datetime) -> object:
        """Do what is due at `now` (one or more units of work); what it returns is its own."""
        ...
