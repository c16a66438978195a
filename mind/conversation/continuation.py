"""Tool calls a stop or crash left open continue in a new run of their conversation.

A call is *open* when its projection is still `running` while its run is not, and it either
waits on an approval or already has a Hand task. Recovery (and a graceful stop) keep such calls
open (`open_call_ids`) while recording their run as interrupted; every other running call ends
`cancelled`. Then:

* a call that already has a task is reconciled with it at start: the continuation waits for
  that task's terminal (or takes the one already recorded) and never offers the call again —
  the work may already have happened on the Hand, and it happens at most once;
* a call whose approval is decided (and that has no task yet) runs at start;
* a call whose approval is pending continues when its decision (or expiry) is committed — the
  Broker reports decisions no execution was waiting for to `Continuation.on_decision`.

Continuing means a new run of the conversation (trigger `approval` or `recovery`, except that
an observation's run keeps its `observation:<trust>`, which the approval policy judges it by;
same principal, detail mode, permissions and origin as the interrupted run) that first
finishes the interrupted tool batch — the open call gets its one terminal, a denied one
returns the reason to the model — then calls the model again, as the interrupted run would
have.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session, aliased

from mind.approvals.model import ApprovalRecord
from mind.conversation import runs
from mind.conversation.history import HistoryMessage
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import RunScope, ToolRuntime
from mind.providers.base import ToolCall
from mind.store.database import Database
from mind.store.models import Approval, Input, Run, Task, ToolProjection
from mind.tools.base import Tool

log = logging.getLogger(__name__)

# (conversation key, tool call id) -> starts the continuation run (or queues it).
Resume = Callable[[str, str], Awaitable[None]]
# How long a continuation waits for a Hand to come back before its tool counts as unknown.
HAND_RECONNECT_WAIT = 60.0
# Run triggers: continuing a call that waited on an approval, or reconciling one with its task.
APPROVAL_TRIGGER = "approval"
RECOVERY_TRIGGER = "recovery"


@dataclass(frozen=True)
class OpenCall:
    conversation_key: str
    tool_call_id: str
    run_id: str
    # Whether it can continue now: it has a task, or its approval is decided.
    ready: bool


def _has_task() -> ColumnElement[bool]:
    return (
        select(Task.id)
        .where(Task.tool_call_id == ToolProjection.tool_call_id)
        .correlate(ToolProjection)
        .exists()
    )


def _is_open() -> ColumnElement[bool]:
    """An open call waits on an approval or already has a Hand task."""
    approval = aliased(Approval)
    has_approval = (
        select(approval.id)
        .where(approval.tool_call_id == ToolProjection.tool_call_id)
        .correlate(ToolProjection)
        .exists()
    )
    return or_(has_approval, _has_task())


def open_call_ids(session: Session, run_id: str) -> list[str]:
    """Running calls of `run_id` that must stay open when the run ends without finishing them."""
    rows = session.scalars(
        select(ToolProjection.tool_call_id).where(
            ToolProjection.run_id == run_id, ToolProjection.status == "running", _is_open()
        )
    )
    return list(rows)


def interrupted_open_calls(session: Session) -> list[OpenCall]:
    """Open calls left by runs that are no longer running, oldest first."""
    rows = session.execute(
        select(
            ToolProjection.conversation_key,
            ToolProjection.tool_call_id,
            ToolProjection.run_id,
            _has_task().label("has_task"),
            Approval.decision,
        )
        .join(Run, Run.id == ToolProjection.run_id)
        .outerjoin(Approval, Approval.tool_call_id == ToolProjection.tool_call_id)
        .where(ToolProjection.status == "running", Run.state != "running", _is_open())
        .order_by(ToolProjection.admitted_at)
    )
    return [
        OpenCall(key, call_id, run_id, bool(has_task) or decision is not None)
        for key, call_id, run_id, has_task, decision in rows
    ]


@dataclass(frozen=True)
class Origin:
    """What the continuation run inherits from the interrupted run."""

    run_id: str
    principal: str
    detail_mode: str
    permissions: dict[str, bool]
    trigger: str
    # What started the interrupted run (`mind.conversation.origins`).
    origin: str


def origin_of(session: Session, tool_call_id: str) -> Origin | None:
    """The interrupted run of an open call; None when the call is not open."""
    found = session.execute(
        select(Run, Approval.decided_by, _has_task().label("has_task"))
        .join(ToolProjection, ToolProjection.run_id == Run.id)
        .outerjoin(Approval, Approval.tool_call_id == ToolProjection.tool_call_id)
        .where(
            ToolProjection.tool_call_id == tool_call_id,
            ToolProjection.status == "running",
            Run.state != "running",
            _is_open(),
        )
    ).first()
    if found is None:
        return None
    run, decided_by, has_task = found
    principal = session.scalar(
        select(Input.principal).where(Input.run_id == run.id).order_by(Input.id).limit(1)
    )
    if runs.is_observation(run.trigger):
        trigger = run.trigger
    else:
        trigger = RECOVERY_TRIGGER if has_task else APPROVAL_TRIGGER
    return Origin(
        run.id,
        principal or decided_by or "",
        run.detail_mode,
        dict(run.permissions),
        trigger,
        run.origin,
    )


class Continuation:
    """Starts continuation runs; see the module docstring."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._resume: Resume | None = None

    async def start(self, resume: Resume) -> None:
        """Continue every open call that can continue now (run after recovery)."""
        self._resume = resume
        calls = await self._database.read(interrupted_open_calls)
        for call in calls:
            if call.ready:
                await self._continue(call.conversation_key, call.tool_call_id)

    async def on_decision(self, record: ApprovalRecord) -> None:
        """Broker callback for a decision no execution in this process was waiting for."""
        calls = await self._database.read(interrupted_open_calls)
        if any(call.tool_call_id == record.tool_call_id for call in calls):
            await self._continue(record.conversation_key, record.tool_call_id)

    async def _continue(self, conversation_key: str, tool_call_id: str) -> None:
        if self._resume is None:
            return
        log.info("continuing the interrupted call %s", tool_call_id)
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
    """Finish the open call `tool_call_id`, then run the calls after it in its batch that
    never started.

    A call that already has a task takes that task's terminal. Otherwise it runs now; its Hand
    tool may be missing right after a restart, until the Hand reconnects: wait up to
    `tool_wait` seconds for it before the call fails as an unknown tool.
    """
    batch = _batch_of(history, tool_call_id)
    answered = {m.tool_call_id for m in history if m.role == "tool"}
    position = [call.id for call in batch].index(tool_call_id)
    results: list[HistoryMessage] = []
    open_call = batch[position]
    finished = await runtime.reconcile(open_call, scope)
    if finished is None:
        tool = await _wait_for_tool(registry, scope, open_call.name, tool_wait)
        finished = await runtime.resume(open_call, tool, scope)
    results.append(finished)
    rest = [call for call in batch[position + 1 :] if call.id not in answered]
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
