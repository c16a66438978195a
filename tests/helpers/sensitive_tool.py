"""A sensitive tool inside the Mind, as a Hand's would be: `sleep_log` reads dataset
`health.sleep` and answers `{"night": <night>, "hours": <hours>}`."""

from __future__ import annotations

import json
from typing import Any

from mind.tools.base import Effect, ToolContext, ToolOutcome


class SleepLog:
    name = "sleep_log"
    description = "Last night's sleep."
    parameters: dict[str, Any] = {"type": "object", "properties": {"night": {"type": "string"}}}
    effect = Effect.READ_ONLY
    hand_id = ""
    sensitive = True
    dataset = "health.sleep"

    def __init__(self, hours: str = "7") -> None:
        self.hours = hours

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        night = arguments.get("night", "last")
        return ToolOutcome(ok=True, output=json.dumps({"night": night, "hours": self.hours}))
