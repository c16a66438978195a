"""What the decision layer's stages answer, as typed values, and the meta-actions they choose
from.

A meta-action is something a plan may use: a tool the conversation's profile offers now, or
one of the scheduler's own (`send_message`: a scheduled action fires as a proactive run, which
can only read and message the owner).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from mind.events.action_views import ActionTiming, PlanStepView, TriggerView
from mind.tools.base import Effect, Tool

SEND_MESSAGE = "send_message"
# The effect class of the scheduler's message to the owner: it changes nothing but the
# conversation.
MESSAGE_OWNER = "message_owner"


@dataclass(frozen=True)
class MetaAction:
    name: str
    description: str
    # An `Effect` value for a tool; `message_owner` for `send_message`.
    effect: str
    kind: Literal["tool", "scheduler"]

    @property
    def schedulable(self) -> bool:
        """Whether a scheduled action's plan may use it (read-only, or messaging the owner)."""
        return self.effect in (Effect.READ_ONLY.value, MESSAGE_OWNER)


SCHEDULER_ACTIONS = (
    MetaAction(
        SEND_MESSAGE,
        "Message the owner when a scheduled action fires (a reminder, a report, an alert).",
        MESSAGE_OWNER,
        "scheduler",
    ),
)


def meta_actions(tools: dict[str, Tool]) -> tuple[MetaAction, ...]:
    """The conversation's tools as meta-actions, then the scheduler's own."""
    offered = tuple(
        MetaAction(tool.name, tool.description, tool.effect.value, "tool")
        for tool in tools.values()
    )
    return offered + SCHEDULER_ACTIONS


class Verdict(StrEnum):
    REFUSED = "refused"
    CONFIRM = "confirm"
    IMMEDIATE = "immediate"
    PLANNED = "planned"


class PendingChoice(StrEnum):
    CONFIRM = "confirm"
    CANCEL = "cancel"
    AMEND = "amend"


@dataclass(frozen=True)
class Tendency:
    """A goal the input asks to have done (goal semantics, not tool steps)."""

    goal: str
    evidence: str


@dataclass(frozen=True)
class PendingDecision:
    """The input answers a pending action: confirm, cancel, or amend it."""

    id: str
    decision: PendingChoice
    amendment: str = ""


@dataclass(frozen=True)
class Extraction:
    tendencies: tuple[Tendency, ...]
    pending: tuple[PendingDecision, ...]


@dataclass(frozen=True)
class Evaluation:
    verdict: Verdict
    reason: str
    title: str
    # The meta-actions it needs, by name.
    actions: tuple[str, ...]
    # For `confirm`: whether it runs now or is scheduled once confirmed; else from the verdict.
    timing: ActionTiming | None
    # For a planned action (and a confirm of one).
    trigger: TriggerView | None


Plan = tuple[PlanStepView, ...]
