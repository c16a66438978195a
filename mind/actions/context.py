"""What every stage is shown besides its own input: the recent conversation, the time in UTC
and in the owner's zone, and the actions waiting for the owner.

Rendered as plain text: the stages read it, and the Scripted provider's `match` searches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from mind.actions.model import MetaAction
from mind.conversation.history import HistoryMessage
from mind.events.action_views import PendingActionView

_ROLES = {"user": "Owner", "assistant": "Assistant", "tool": "Tool result", "note": "Platform"}
# A long tool result or message says enough in its first part.
_MAX_LINE = 600


@dataclass(frozen=True)
class StageContext:
    recent: tuple[str, ...]
    now: datetime
    time_zone: str
    pending: tuple[PendingActionView, ...]

    def render(self) -> str:
        local = self.now.astimezone(ZoneInfo(self.time_zone))
        parts = [
            f"Current time: {self.now.isoformat(timespec='seconds')} (UTC); "
            f"{local.isoformat(timespec='seconds')} in the owner's time zone {self.time_zone}.",
            "Recent conversation:\n" + ("\n".join(self.recent) or "(nothing yet)"),
            "Actions waiting for the owner's confirmation:\n"
            + ("\n".join(_pending_line(action) for action in self.pending) or "(none)"),
        ]
        return "\n\n".join(parts)


def _pending_line(action: PendingActionView) -> str:
    steps = ", ".join(step.action for step in action.plan)
    return f"- {action.id}: {action.title} (goal: {action.goal}; {action.timing.value}; {steps})"


def recent_lines(history: Sequence[HistoryMessage], count: int) -> tuple[str, ...]:
    """The last `count` messages as `Role: text` lines."""
    chosen = list(history)[-count:] if count else []
    lines = []
    for message in chosen:
        text = " ".join(message.text.split())
        if len(text) > _MAX_LINE:
            text = text[:_MAX_LINE] + "…"
        lines.append(f"{_ROLES.get(message.role, message.role)}: {text}")
    return tuple(lines)


def render_meta_actions(actions: Sequence[MetaAction]) -> str:
    lines = [
        f"- {action.name} [{action.effect}, {action.kind}]: {action.description}"
        for action in actions
    ]
    return "Available meta-actions:\n" + ("\n".join(lines) or "(none)")
