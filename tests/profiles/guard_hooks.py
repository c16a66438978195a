"""Hooks a declared profile names by import path in the end-to-end tests of profile runs."""

from __future__ import annotations

from mind.profiles.model import ToolCallInfo, TurnInfo
from mind.tools.base import ToolOutcome

STOP_TEXT = "one look, then stop"


def no_waiting(call: ToolCallInfo) -> str | None:
    """Blocks `wait`; every other tool runs."""
    return "no waiting in this profile" if call.tool == "wait" else None


async def hide_the_clock(call: ToolCallInfo, outcome: ToolOutcome) -> ToolOutcome | None:
    """The model sees a replacement for `current_time`'s result; other results are kept."""
    if call.tool != "current_time":
        return None
    return ToolOutcome(ok=True, output="the clock is hidden by the profile")


def stop_on_cue(turn: TurnInfo) -> bool:
    """Ends the run after the step whose text is `STOP_TEXT`."""
    return turn.text == STOP_TEXT
