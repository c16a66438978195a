"""What every stage is shown besides its own input: the recent conversation, the time in UTC
and in the owner's zone, the actions waiting for the owner, the conversation's scheduled
actions and its memory.

The scheduled actions (id, title, goal, state, next time in the owner's zone) keep a stage
from planning one that exists already and let it name the one a person means ("move my
10 o'clock reminder"); the memory is what the person asked to be remembered.

Rendered as plain text: the stages read it, and the Scripted provider's `match` searches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from mind.actions.model import MetaAction
from mind.conversation.history import HistoryMessage
from mind.events.action_views import PendingActionView, ScheduledActionView

_ROLES = {"user": "Owner", "assistant": "Assistant", "tool": "Tool result", "note": "Platform"}
# A long tool result or message says enough in its first part.
_MAX_LINE = 600


@dataclass(frozen=True)
class StageContext:
    recent: tuple[str, ...]
    now: datetime
    time_zone: str
    pending: tuple[PendingActionView, ...]
    scheduled: tuple[ScheduledActionView, ...] = ()
    # The conversation's memory as (key, text).
    memory: tuple[tuple[str, str], ...] = ()

    def render(self) -> str:
        zone = ZoneInfo(self.time_zone)
        local = self.now.astimezone(zone)
        parts = [
            f"Current time: {self.now.isoformat(timespec='seconds')} (UTC); "
            f"{local.isoformat(timespec='seconds')} in the owner's time zone {self.time_zone}.",
            "Recent conversation:\n" + ("\n".join(self.recent) or "(nothing yet)"),
            "Actions waiting for the owner's confirmation:\n"
            + ("\n".join(_pending_line(action) for action in self.pending) or "(none)"),
            "Scheduled actions of this conversation:\n"
            + ("\n".join(_scheduled_line(action, zone) for action in self.scheduled) or "(none)"),
            "The conversation's memory:\n"
            + ("\n".join(f"- {key}: {_short(text)}" for key, text in self.memory) or "(empty)"),
        ]
        return "\n\n".join(parts)


def _pending_line(action: PendingActionView) -> str:
    steps = ", ".join(step.action for step in action.plan)
    return f"- {action.id}: {action.title} (goal: {action.goal}; {action.timing.value}; {steps})"


def _scheduled_line(action: ScheduledActionView, zone: ZoneInfo) -> str:
    when = action.next_fire_at
    next_time = when.astimezone(zone).isoformat(timespec="minutes") if when else "none"
    return (
        f"- {action.id}: {action.title} (goal: {action.goal}; {action.state.value}; "
        f"{action.trigger.kind.value}; next: {next_time})"
    )


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text[:_MAX_LINE] + "…" if len(text) > _MAX_LINE else text


def recent_lines(history: Sequence[HistoryMessage], count: int) -> tuple[str, ...]:
    """The last `count` messages as `Role: text` lines."""
    chosen = list(history)[-count:] if count else []
    lines = []
    for message in chosen:
        lines.append(f"{_ROLES.get(message.role, message.role)}: {_short(message.text)}")
    return tuple(lines)


def render_meta_actions(actions: Sequence[MetaAction]) -> str:
    lines = [
        f"- {action.name} [{action.effect}, {action.kind}]: {action.description}"
        for action in actions
    ]
    return "Available meta-actions:\n" + ("\n".join(lines) or "(none)")
