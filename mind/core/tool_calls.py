"""Running one step's tool calls, as the run's profile says (`Profile.tool_execution`).

- `sequential` (the default): in order, one after the other; when a steering message is
  waiting, the calls not yet started are recorded as skipped; a cancellation records the calls
  not yet started as skipped. Adjacent calls of tools that say they run alongside others
  (`runs_alongside`: `delegate`, whose children work on their own) start together, as a
  parallel step's calls do.
- `parallel`: every call starts at once (each admitted as it starts, in the model's order);
  each result is stored as its call ends, and the run goes on with them in that stored order,
  the order every later request renders from the store. A steering message waiting before
  the step skips them all; a cancellation reaches every running call, each recording its own
  end.

Either way each call goes through the whole lifecycle of the tool runtime (admission,
authorization, execution, one terminal).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from mind.conversation.history import HistoryMessage
from mind.core.tool_runtime import RunScope, ToolRuntime
from mind.providers.base import ToolCall
from mind.tools.base import Tool

STEERED = "a new user message arrived first"


async def run_calls(
    runtime: ToolRuntime,
    calls: list[ToolCall],
    tools: dict[str, Tool],
    scope: RunScope,
    steer_waiting: Callable[[], bool],
) -> list[HistoryMessage]:
    if scope.profile.tool_execution == "parallel":
        return await _parallel(runtime, calls, tools, scope, steer_waiting)
    return await _sequential(runtime, calls, tools, scope, steer_waiting)


async def _sequential(
    runtime: ToolRuntime,
    calls: list[ToolCall],
    tools: dict[str, Tool],
    scope: RunScope,
    steer_waiting: Callable[[], bool],
) -> list[HistoryMessage]:
    results: list[HistoryMessage] = []
    index = 0
    while index < len(calls):
        if steer_waiting():
            for rest in calls[index:]:
                results.append(await runtime.skip(rest, tools.get(rest.name), scope, STEERED))
            return results
        group = _group_at(calls, index, tools)
        try:
            ran = await all_ended(
                [runtime.execute(call, tools.get(call.name), scope) for call in group]
            )
        except asyncio.CancelledError:
            for rest in calls[index + len(group) :]:
                await asyncio.shield(
                    runtime.skip(rest, tools.get(rest.name), scope, "the run was cancelled")
                )
            raise
        results.extend(sorted(ran, key=lambda message: message.id))
        index += len(group)
    return results


def _group_at(calls: list[ToolCall], index: int, tools: dict[str, Tool]) -> list[ToolCall]:
    """The call at `index`, with the adjacent ones after it when all run alongside others."""
    if not _alongside(tools.get(calls[index].name)):
        return [calls[index]]
    end = index + 1
    while end < len(calls) and _alongside(tools.get(calls[end].name)):
        end += 1
    return calls[index:end]


def _alongside(tool: Tool | None) -> bool:
    return bool(getattr(tool, "runs_alongside", False))


async def _parallel(
    runtime: ToolRuntime,
    calls: list[ToolCall],
    tools: dict[str, Tool],
    scope: RunScope,
    steer_waiting: Callable[[], bool],
) -> list[HistoryMessage]:
    if calls and steer_waiting():
        return [await runtime.skip(call, tools.get(call.name), scope, STEERED) for call in calls]
    results = await all_ended(
        [runtime.execute(call, tools.get(call.name), scope) for call in calls]
    )
    return sorted(results, key=lambda message: message.id)


async def all_ended(calls: list[Awaitable[HistoryMessage]]) -> list[HistoryMessage]:
    """The results of calls running at once, once every one of them has ended: a cancelled
    step returns only after each call recorded its own end, so the run's terminal never
    races a call's."""
    ended = await asyncio.gather(*calls, return_exceptions=True)
    for item in ended:
        if isinstance(item, BaseException):
            raise item
    return [item for item in ended if not isinstance(item, BaseException)]
