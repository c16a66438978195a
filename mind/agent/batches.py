"""Finishing the tool batch of an interrupted call, as its continuation run starts.

The open call takes its task's terminal or runs now; the calls after it in its batch that
already have an execution (several Hand tasks or child runs of one step) take theirs at the
same time, and the ones that never started run too. See `mind.conversation.continuation` for
which calls are open.
"""

from __future__ import annotations

import asyncio

from mind.conversation.history import HistoryMessage
from mind.core.tool_calls import all_ended
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import RunScope, ToolRuntime
from mind.providers.base import ToolCall
from mind.tools.base import Tool

# How long a continuation waits for a Hand to come back before its tool counts as unknown.
HAND_RECONNECT_WAIT = 60.0


async def finish_batch(
    runtime: ToolRuntime,
    registry: ToolRegistry,
    scope: RunScope,
    history: list[HistoryMessage],
    tool_call_id: str,
    *,
    tool_wait: float,
) -> list[HistoryMessage]:
    """Finish the open call `tool_call_id` and the other calls of its batch that already have
    a task, then run the calls after it in its batch that never started.

    A call that already has a task takes that task's terminal. Otherwise it runs now; its Hand
    tool may be missing right after a restart, until the Hand reconnects: wait up to
    `tool_wait` seconds for it before the call fails as an unknown tool.
    """
    batch = _batch_of(history, tool_call_id)
    answered = {m.tool_call_id for m in history if m.role == "tool"}
    position = [call.id for call in batch].index(tool_call_id)
    open_call = batch[position]
    others = [call for call in batch if call.id not in answered and call.id != tool_call_id]
    started = [call for call in others if await runtime.recorded(call.id)]
    rest = [call for call in batch[position + 1 :] if call in others and call not in started]

    async def settle(call: ToolCall) -> HistoryMessage:
        finished = await runtime.reconcile(call, scope)
        if finished is None:
            tool = await _wait_for_tool(registry, scope, call.name, tool_wait)
            finished = await runtime.resume(call, tool, scope)
        return finished

    settled = await all_ended([settle(call) for call in [open_call, *started]])
    results = sorted(settled, key=lambda message: message.id)
    tools = registry.tools_for(scope.conversation_key, scope.profile)
    for index, call in enumerate(rest):
        try:
            results.append(await runtime.execute(call, tools.get(call.name), scope))
        except asyncio.CancelledError:
            for skipped in rest[index + 1 :]:
                await asyncio.shield(
                    runtime.skip(skipped, tools.get(skipped.name), scope, "the run was cancelled")
                )
            raise
    return results


def batch_is_last(history: list[HistoryMessage], tool_call_id: str) -> bool:
    """Whether nothing but tool results followed the batch of `tool_call_id` (so the model
    can be called again with them)."""
    for index, message in enumerate(history):
        if message.role == "assistant" and any(c.id == tool_call_id for c in message.tool_calls):
            return all(m.role == "tool" for m in history[index + 1 :])
    return False


def _batch_of(history: list[HistoryMessage], tool_call_id: str) -> list[ToolCall]:
    for message in history:
        if message.role == "assistant":
            if any(call.id == tool_call_id for call in message.tool_calls):
                return list(message.tool_calls)
    raise LookupError(f"no stored assistant message requested tool call {tool_call_id}")


async def _wait_for_tool(
    registry: ToolRegistry, scope: RunScope, name: str, patience: float
) -> Tool | None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    while True:
        tool = registry.tools_for(scope.conversation_key, scope.profile).get(name)
        if tool is not None or loop.time() >= deadline:
            return tool
        await asyncio.sleep(0.2)
