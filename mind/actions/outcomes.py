"""What the decision layer did with an input, per tendency or pending action, and what that
means for the run: its note and its tool selection.

The note (a `note` message, payload `{"kind": "decision", ...}`) is stored before the run's
first model step, so the model, the owner and every later reader see the same account.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from mind.actions.model import Plan
from mind.actions.structured import MalformedAnswer
from mind.tools.selection import ToolSelection, read_only, read_only_and

NOTE_KIND = "decision"


class Fate(StrEnum):
    REFUSED = "refused"
    WAITING = "waiting"
    SCHEDULED = "scheduled"
    EXECUTING = "executing"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    # A decision named an action no longer pending (decided or gone).
    STALE = "stale"


@dataclass(frozen=True)
class Outcome:
    fate: Fate
    goal: str
    title: str = ""
    reason: str = ""
    action_id: str = ""
    schedule_id: str = ""
    next_fire_at: datetime | None = None
    plan: Plan = ()

    def line(self, failed: bool = False) -> str:
        """The note's line; `failed`: the decision failed later, so nothing executes now."""
        what = f"{self.title or self.goal!r}"
        match self.fate:
            case Fate.REFUSED:
                return f"- {what}: refused. {self.reason}"
            case Fate.WAITING:
                return (
                    f"- {what}: waiting for the owner's confirmation as {self.action_id} "
                    f"({self.reason}). Tell the owner; nothing is done until they confirm."
                )
            case Fate.SCHEDULED:
                when = self.next_fire_at.isoformat() if self.next_fire_at else "on its condition"
                return f"- {what}: scheduled as {self.schedule_id}, next {when}."
            case Fate.EXECUTING if failed:
                return f"- {what}: not executed now; ask again."
            case Fate.EXECUTING:
                steps = "; ".join(
                    f"{step.order}. {step.action} ({step.purpose})"
                    + (f" after {', '.join(map(str, step.after))}" if step.after else "")
                    for step in self.plan
                )
                return f"- {what}: executing now, in this order: {steps}."
            case Fate.CANCELLED:
                return f"- {what} ({self.action_id}): cancelled by the owner; do nothing about it."
            case Fate.EXPIRED:
                return f"- {what} ({self.action_id}): expired before it was confirmed."
            case Fate.STALE:
                return f"- {self.action_id}: {self.reason}"
        raise AssertionError(self.fate)

    def to_payload(self) -> dict[str, Any]:
        return {
            "fate": self.fate.value,
            "goal": self.goal,
            "title": self.title,
            "reason": self.reason,
            "action_id": self.action_id,
            "schedule_id": self.schedule_id,
            "next_fire_at": self.next_fire_at.isoformat() if self.next_fire_at else "",
            "plan": [step.to_payload() for step in self.plan],
        }


@dataclass(frozen=True)
class Decision:
    outcomes: tuple[Outcome, ...] = ()
    failure: MalformedAnswer | None = None

    @property
    def selection(self) -> ToolSelection:
        """Read-only tools, and the meta-actions of the plans executing now (none after a
        failure: the input is then plain chat)."""
        if self.failure is not None:
            return ToolSelection(read_only)
        names = frozenset(
            step.action
            for outcome in self.outcomes
            if outcome.fate is Fate.EXECUTING
            for step in outcome.plan
        )
        return ToolSelection(read_only_and(names)) if names else ToolSelection(read_only)

    def note(self) -> tuple[str, dict[str, Any]] | None:
        """The note's text and payload; None when there is nothing to say: ordinary chat, or
        a stage that failed before anything was applied (a failure is for the operator, in
        the log and the count, never for the conversation)."""
        if not self.outcomes:
            return None
        failed = self.failure is not None
        lines = [
            "The decision layer read the input before this run:",
            *(outcome.line(failed) for outcome in self.outcomes),
        ]
        payload: dict[str, Any] = {
            "kind": NOTE_KIND,
            "outcomes": [outcome.to_payload() for outcome in self.outcomes],
        }
        return "\n".join(lines), payload
