"""Runs that a restart interrupted while a tool call waited for approval continue once it is
decided.

At a crash, the waiting call's projection is still `running` and its approval row is pending
(or was decided just before the crash, before the run acted on it). Recovery keeps such calls
open (`open_call_ids`) while it records their run as interrupted. Then:

* a call whose approval is already decided continues at start;
* a pending one continues when its decision (or expiry) is committed — the Broker reports
  decisions no execution was waiting for to `Continuation.on_decision`.

Continuing means a new run of the conversation (trigger `approval`, same principal, detail
mode and permissions as the interrupted run) that first finishes the interrupted tool batch —
the approved call runs (once: its projection gets its one terminal), a denied one returns the
reason to the model — then calls the model again, as the interrupted run would have.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mind.approvals.model import ApprovalRecord
from mind.core.history import HistoryMessage
from mind.providers.base import ToolCall
from mind.store.models import Approval, Input, Run, ToolProjection
from mind.tools.base import Tool
from mind.tools.registry import ToolRegistry
from mind.tools.runtime import RunScope, ToolRuntime

log = logging.getLogger(__name__)

# (conversation key, tool call id) -> starts the continuation run (or queues it).
Resume = Callable[[str, str], Awaitable[None]]
# How long a continuation waits for a Hand to come back before its tool counts as unknown.
HAND_RECONNECT_WAIT = 60.0
TRIGGER = "approval"


@dataclass(frozen=True)
class OpenCall:
    conversation_key: str
    tool_call_id: str
    run_id: str
    decided: bool


async def open_call_ids(session: AsyncSession, run_id: str) -> list[str]:
    """Calls of `run_id` still waiting on an approval (or on acting on its decision)."""
    rows = await session.scalars(
        select(ToolProjection.tool_call_id)
        .join(Approval, Approval.tool_call_id == ToolProjection.tool_call_id)
        .where(ToolProjection.run_id == run_id, ToolProjection.status == "running")
    )
    return list(rows)


async def interrupted_open_calls(session: AsyncSession) -> list[OpenCall]:
    """Approval-gated calls left open by runs that are no longer running, oldest first."""
    rows = await session.execute(
        select(Approval, ToolProjection.run_id)
        .join(ToolProjection, ToolProjection.tool_call_id == Approval.tool_call_id)
        .join(Run, Run.id == ToolProjection.run_id)
        .where(ToolProjection.status == "running", Run.state != "running")
        .order_by(Approval.requested_at)
    )
    return [
        OpenCall(approval.conversation_key, approval.tool_call_id, run_id, approval.decision
                 is not None)
        for approval, run_id in rows
    ]


@dataclass(frozen=True)
class Origin:
    """What the continuation run inherits from the interrupted run."""

    run_id: str
    principal: str
    detail_mode: str
    permissions: dict[str, bool]


async def origin_of(session: AsyncSession, tool_call_id: str) -> Origin | None:
    """The interrupted run of an open approval-gated call; None when the call is not open."""
    found = (
        await session.execute(
            select(Run, Approval.decided_by)
            .join(ToolProjection, ToolProjection.run_id == Run.id)
            .join(Approval, Approval.tool_call_id == ToolProjection.tool_call_id)
            .where(
                ToolProjection.tool_call_id == tool_call_id,
                ToolProjection.status == "running",
                Run.state != "running",
            )
        )
    ).first()
    if found is None:
        return None
    run, decided_by = found
    principal = await session.scalar(
        select(Input.principal).where(Input.run_id == run.id).order_by(Input.id).limit(1)
    )
    return Origin(run.id, principal or decided_by or "", run.detail_mode, dict(run.permissions))


class Continuation:
    """Starts continuation runs; see the module docstring."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._resume: Resume | None = None

    async def start(self, resume: Resume) -> None:
        """Continue every interrupted call that is already decided (run after recovery)."""
        self._resume = resume
        async with self._sessions() as session:
            calls = await interrupted_open_calls(session)
        for call in calls:
            if call.decided:
                await self._continue(call.conversation_key, call.tool_call_id)

    async def on_decision(self, record: ApprovalRecord) -> None:
        """Broker callback for a decision no execution in this process was waiting for."""
        async with self._sessions() as session:
            calls = await interrupted_open_calls(session)
        if any(call.tool_call_id == record.tool_call_id for call in calls):
            await self._continue(record.conversation_key, record.tool_call_id)

    async def _continue(self, conversation_key: str, tool_call_id: str) -> None:
        if self._resume is None:
            return
        log.info("continuing %s after its approval was decided", tool_call_id)
        await self._resume(conversation_key, tool_call_id)


async def finish_batch(
    runtime: ToolRuntime,
    registry: ToolRegistry,
    scope: RunScope,
    history: list[HistoryMessage],
    tool_call_id: str,
    *,
    tool_wait: float,
) -> list[HistoryMessage]:
    """Run the open call `tool_call_id` and the calls after it in its batch that never started.

    A Hand tool may be missing right after a restart, until its Hand reconnects: wait up to
    `tool_wait` seconds for it before the call fails as an unknown tool.
    """
    batch = _batch_of(history, tool_call_id)
    answered = {m.tool_call_id for m in history if m.role == "tool"}
    position = [call.id for call in batch].index(tool_call_id)
    results: list[HistoryMessage] = []
    open_call = batch[position]
    tool = await _wait_for_tool(registry, scope.conversation_key, open_call.name, tool_wait)
    results.append(await runtime.resume(open_call, tool, scope))
    rest = [call for call in batch[position + 1 :] if call.id not in answered]
    tools = registry.tools_for(scope.conversation_key)
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
    registry: ToolRegistry, conversation_key: str, name: str, patience: float
) -> Tool | None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    while True:
        tool = registry.tools_for(conversation_key).get(name)
        if tool is not None or loop.time() >= deadline:
            return tool
        await asyncio.sleep(0.2)
