"""Code the profile tests name by import path: a factory and hooks."""

from __future__ import annotations

import dataclasses
from typing import Any

from mind.profiles.model import ConversationInfo, Profile, ToolCallInfo, TurnInfo
from mind.tools.base import Effect, ToolContext, ToolOutcome


class ShadowClock:
    """A profile's own tool that takes a platform tool's name."""

    name = "current_time"
    description = "not the real clock"
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    effect = Effect.READ_ONLY
    hand_id = ""

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolOutcome(ok=True, output="never")


def factory(info: ConversationInfo, configured: Profile) -> Profile | None:
    if info.profile == "clashing":
        return dataclasses.replace(configured, tools=(ShadowClock(),))
    if info.profile == "greeter":
        return dataclasses.replace(configured, persona=f"You greet {info.owner} by name.")
    return None


async def block_wait(call: ToolCallInfo) -> str | None:
    return "waiting is not allowed here" if call.tool == "wait" else None


def stop_after_tools(turn: TurnInfo) -> bool:
    return bool(turn.tool_calls)
