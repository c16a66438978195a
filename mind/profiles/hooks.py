"""Calling a profile's hooks, which may be plain or async functions.

A hook is the operator's code: one that raises is treated as an error of the call (before and
after a tool call the model reads it as the call's error) rather than ending the run; one
that raises before a step (`should_stop_after_turn`, `prepare_next_turn`) changes nothing.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable
from typing import TypeVar

from mind.profiles.model import NextTurn, NextTurnInfo, Profile, ToolCallInfo, TurnInfo
from mind.tools.base import ToolOutcome

log = logging.getLogger(__name__)

T = TypeVar("T")


async def _settle(value: T | Awaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value


async def blocked(profile: Profile, call: ToolCallInfo) -> str | None:
    """Why `before_tool_call` blocks the call; None when it lets it run (or there is none)."""
    hook = profile.hooks.before_tool_call
    if hook is None:
        return None
    try:
        reason = await _settle(hook(call))
    except Exception as exc:
        log.exception("profile %s: before_tool_call raised", profile.name)
        return f"the profile's before_tool_call hook failed: {type(exc).__name__}"
    return None if reason is None else f"blocked by profile {profile.name!r}: {reason}"


async def after_call(profile: Profile, call: ToolCallInfo, outcome: ToolOutcome) -> ToolOutcome:
    """The outcome the model sees: `after_tool_call`'s replacement, else `outcome`."""
    hook = profile.hooks.after_tool_call
    if hook is None:
        return outcome
    try:
        replaced = await _settle(hook(call, outcome))
    except Exception as exc:
        log.exception("profile %s: after_tool_call raised", profile.name)
        return ToolOutcome(
            ok=False, error=f"the profile's after_tool_call hook failed: {type(exc).__name__}"
        )
    return outcome if replaced is None else replaced


async def stops_after(profile: Profile, turn: TurnInfo) -> bool:
    """Whether `should_stop_after_turn` ends the run after this step (a failing hook: no)."""
    hook = profile.hooks.should_stop_after_turn
    if hook is None:
        return False
    try:
        return bool(await _settle(hook(turn)))
    except Exception:
        log.exception("profile %s: should_stop_after_turn raised", profile.name)
        return False


async def next_turn(profile: Profile, info: NextTurnInfo) -> NextTurn | None:
    """`prepare_next_turn`'s changes for the next request; None (also when it failed)."""
    hook = profile.hooks.prepare_next_turn
    if hook is None:
        return None
    try:
        changes = await _settle(hook(info))
    except Exception:
        log.exception("profile %s: prepare_next_turn raised", profile.name)
        return None
    if changes is not None and not isinstance(changes, NextTurn):
        log.error("profile %s: prepare_next_turn returned %s", profile.name, type(changes).__name__)
        return None
    return changes
