"""Built-in local tools, run inside the Mind."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mind.tools.base import Effect, Tool, ToolContext, ToolOutcome


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class CurrentTimeTool:
    """Reads the Mind's clock (`now`), the one its schedules run on, so a moved clock (the
    scheduler's clock file) is the time the model is told as well."""

    name = "current_time"
    description = (
        "The current date and time: UTC, and local time in an IANA time zone when given "
        "(e.g. 'Europe/Paris')."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "timezone": {
                "type": "string",
                "minLength": 1,
                "maxLength": 64,
                "description": "IANA time zone name",
            },
        },
        "additionalProperties": False,
    }
    effect = Effect.READ_ONLY
    hand_id = ""

    def __init__(self, now: Callable[[], datetime]) -> None:
        self._now = now

    def render_decision(self, arguments: dict[str, Any]) -> str:
        zone = arguments.get("timezone")
        return f"read the current time (UTC and {zone})" if zone else "read the current time (UTC)"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        now = self._now()
        result: dict[str, str] = {"utc": now.isoformat(timespec="seconds")}
        zone_name = arguments.get("timezone")
        if zone_name:
            try:
                zone = ZoneInfo(zone_name)
            except (ZoneInfoNotFoundError, ValueError):
                return ToolOutcome(ok=False, error=f"unknown time zone {zone_name!r}")
            result["timezone"] = zone_name
            result["local"] = now.astimezone(zone).isoformat(timespec="seconds")
        return ToolOutcome(ok=True, output=_json(result))


class WaitTool:
    name = "wait"
    description = "Pause for a number of seconds (at most 600) before continuing."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 600}},
        "required": ["seconds"],
        "additionalProperties": False,
    }
    effect = Effect.READ_ONLY
    hand_id = ""

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return f"wait {arguments['seconds']:g} seconds"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        total = float(arguments["seconds"])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + total
        while (left := deadline - loop.time()) > 0:
            done = total - left
            context.report_progress(f"waited {done:.0f} of {total:g} s", done / total)
            await asyncio.sleep(min(1.0, left))
        context.report_progress(f"waited {total:g} s", 1.0)
        return ToolOutcome(ok=True, output=_json({"waited_seconds": total}))


def builtin_tools(now: Callable[[], datetime]) -> list[Tool]:
    """The built-ins, telling the time by `now` (aware, UTC): the Mind's clock."""
    return [CurrentTimeTool(now), WaitTool()]
