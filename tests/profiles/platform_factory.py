"""A factory whose tools use the conversation's platform (named by the platform e2e tests).

`plan_trip` builds, fills and sends a `trip` widget and a text message through
`platform.widgets` and `platform.messages`; `await_cancel` waits for the run to be cancelled,
then tries a write with a `with_signal` client and writes what happened to the file
`PLATFORM_PROBE` names.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

from mind.agent.platform import ConversationPlatform
from mind.profiles.model import ConversationInfo, Profile
from mind.profiles.scope import CancelSignal, PlatformRequestError
from mind.tools.base import Effect, ToolContext, ToolOutcome

PROBE = "PLATFORM_PROBE"
GOOD_TRIP = "Have a good trip!"
_NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}
# Tasks a tool leaves running past its call, kept from the garbage collector.
_watchers: set[asyncio.Task[None]] = set()


class PlanTrip:
    name = "plan_trip"
    description = "Plan the trip and show it as a card."
    parameters = _NO_ARGUMENTS
    effect = Effect.WORKSPACE_WRITE
    hand_id = ""

    def __init__(self, platform: ConversationPlatform, signal: CancelSignal) -> None:
        self._platform = platform
        self._signal = signal

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        widgets = self._platform.widgets.with_signal(self._signal)
        call = context.tool_call_id
        made = await widgets.create("trip", "Rome in May", idempotency_key=f"trip:{call}")
        await widgets.write(made, "stops", "r1", {"place": "Rome", "nights": 3})
        await widgets.set_presentation(made, "Three nights in Rome")
        await widgets.send(made, idempotency_key=f"trip-send:{call}")
        await self._platform.messages.send(GOOD_TRIP, idempotency_key=f"trip-note:{call}")
        return ToolOutcome(ok=True, output=f"planned {made}")


class AwaitCancel:
    name = "await_cancel"
    description = "Wait until the run is cancelled."
    parameters = _NO_ARGUMENTS
    effect = Effect.READ_ONLY
    hand_id = ""

    def __init__(self, platform: ConversationPlatform, signal: CancelSignal) -> None:
        self._widgets = platform.widgets.with_signal(CancelSignal())
        self._signal = signal

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        probe = Path(os.environ[PROBE])

        async def after_cancel() -> None:
            reason = await self._signal.wait()
            try:
                await self._widgets.create("trip", "Too late")
                probe.write_text(f"{reason} created")
            except PlatformRequestError as exc:
                probe.write_text(f"{reason} {exc.code}")

        task = asyncio.get_running_loop().create_task(after_cancel())
        _watchers.add(task)
        task.add_done_callback(_watchers.discard)
        probe.write_text("waiting")
        await asyncio.Event().wait()
        return ToolOutcome(ok=False, error="never")


def factory(info: ConversationInfo, configured: Profile) -> Profile | None:
    if info.profile != "planner" or info.platform is None:
        return None
    tools = (PlanTrip(info.platform, info.signal), AwaitCancel(info.platform, info.signal))
    return dataclasses.replace(configured, tools=tools)
