"""Hand tools as the tool runtime sees them: `<hand name>__<tool>`, run as remote tasks.

A foreground call offers the task, relays progress and returns the task's single terminal as
the tool outcome. A background call (the Hand declared the tool `background`) returns at once
with the task id; its result reaches the conversation later through the Authority's
background sink.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from mind.remote.authority import Authority, HandUnavailable, TaskWaiter
from mind.remote.hub import HandHub
from mind.remote.model import NewTask, TaskRecord, TaskState, ToolDecl
from mind.tools.base import Effect, Tool, ToolContext, ToolOutcome
from tobe.runtime.decision_template import render_template, schema_defaults

SEPARATOR = "__"

# Conversation key -> name of its active Hand ("" lets it use every attached Hand).
ActiveHand = Callable[[str], str]
# Conversation key -> its audience (owner and members).
Audience = Callable[[str], Sequence[str]]


def qualified_name(hand_name: str, tool: str) -> str:
    return f"{hand_name}{SEPARATOR}{tool}"


def outcome_of(record: TaskRecord) -> ToolOutcome:
    """The tool outcome the model sees for a task's terminal."""
    match record.state:
        case TaskState.SUCCEEDED:
            return ToolOutcome(ok=True, output=record.output, images=record.images)
        case TaskState.REJECTED:
            return ToolOutcome(
                ok=False, error=f"the Hand refused the call: {record.error}", status="denied"
            )
        case TaskState.CANCELLED:
            return ToolOutcome(ok=False, error=record.error or "cancelled", status="cancelled")
        case TaskState.TIMED_OUT | TaskState.LOST:
            return ToolOutcome(ok=False, error=record.error)
        case _:
            return ToolOutcome(ok=False, error=record.error or "the tool failed")


def background_note(record: TaskRecord) -> str:
    """Text that tells the conversation how a background task ended."""
    name = qualified_name(record.hand_name, record.tool)
    outcome = outcome_of(record)
    body = outcome.output if outcome.ok else outcome.error
    return (
        f"Background task {record.id} ({name}, call {record.tool_call_id}) "
        f"ended {record.state.value}:\n{body}"
    )


class RemoteTool:
    """One tool of one attached Hand."""

    def __init__(self, authority: Authority, hand_name: str, hand_id: str, decl: ToolDecl) -> None:
        self._authority = authority
        self._hand_name = hand_name
        self._decl = decl
        self.name = qualified_name(hand_name, decl.name)
        self.description = decl.description
        self.parameters = decl.parameters
        self.effect: Effect = decl.effect
        self.hand_id = hand_id
        # `mind.sealing.sensitivity` reads these.
        self.sensitive = decl.sensitive
        self.dataset = decl.dataset or decl.name

    def render_decision(self, arguments: dict[str, Any]) -> str:
        """The Hand's declared decision template over the arguments ("" when it has none)."""
        if not self._decl.decision_template:
            return ""
        values = {**schema_defaults(self.parameters), **arguments}
        return render_template(self._decl.decision_template, values)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        spec = NewTask(
            conversation_key=context.conversation_key,
            run_id=context.run_id,
            tool_call_id=context.tool_call_id,
            hand_name=self._hand_name,
            tool=self._decl.name,
            arguments=arguments,
            detail_mode=context.detail_mode,
            background=self._decl.background,
            approval=context.approval,
        )
        progress = None if self._decl.background else context.report_progress
        # Shielded: a cancel arriving while the task is being recorded must still reach the
        # Hand, so the offer completes and is then cancelled like any running task.
        offering = asyncio.ensure_future(self._authority.offer(spec, on_progress=progress))
        try:
            waiter = await asyncio.shield(offering)
        except HandUnavailable as exc:
            return ToolOutcome(ok=False, error=str(exc))
        except asyncio.CancelledError:
            with contextlib.suppress(HandUnavailable):
                await cancel_task(self._authority, await offering)
            raise
        if self._decl.background:
            self._authority.forget(waiter.task_id)
            return background_started(waiter.task_id)
        try:
            return outcome_of(await waiter.terminal())
        except asyncio.CancelledError:
            await cancel_task(self._authority, waiter)
            raise


def background_started(task_id: str) -> ToolOutcome:
    """What a background call returns at once: its task id."""
    started = {
        "task_id": task_id,
        "status": "started",
        "note": "runs in the background; its result arrives as a note",
    }
    return ToolOutcome(ok=True, output=json.dumps(started))


async def cancel_task(authority: Authority, waiter: TaskWaiter) -> None:
    """Ask the Hand to stop and wait (bounded) for the task's terminal; a Hand that does not
    confirm in time gets a Mind-side `cancelled` terminal, so the task always has one when the
    call records its own (and a later result is refused).

    While the Mind stops, the task keeps running instead: its call stays open and the next
    start takes its result (`HandTaskLedger`).
    """
    if not authority.stopping:
        await asyncio.shield(_cancel_and_settle(authority, waiter))
    authority.forget(waiter.task_id)


async def _cancel_and_settle(authority: Authority, waiter: TaskWaiter) -> None:
    await authority.cancel(waiter.task_id, "the tool call was cancelled")
    patience = authority.settings.cancel_wait
    try:
        async with asyncio.timeout(patience):
            await waiter.terminal()
        return
    except TimeoutError:
        pass
    record = await authority.registry.get(waiter.task_id)
    if record is not None and not record.terminal:
        reason = f"cancelled: the Hand did not confirm the cancel within {patience:g} s"
        await authority.end_mind_side(record, TaskState.CANCELLED, reason)


class HandTaskLedger:
    """The runtime's `ExecutionLedger` over Hand tasks: a call with a task is never offered
    again; after a restart its continuation waits for that task's terminal instead."""

    def __init__(self, authority: Authority) -> None:
        self._authority = authority

    async def recorded(self, tool_call_id: str) -> bool:
        return await self._authority.registry.for_call(tool_call_id) is not None

    async def ended(self, tool_call_id: str) -> ToolOutcome | None:
        record = await self._authority.registry.for_call(tool_call_id)
        if record is None or not record.terminal or record.background:
            return None
        return outcome_of(record)

    async def outcome(
        self, tool_call_id: str, report_progress: Callable[[str, float | None], None]
    ) -> ToolOutcome | None:
        record = await self._authority.registry.for_call(tool_call_id)
        if record is None:
            return None
        if record.background:
            return background_started(record.id)
        waiter = await self._authority.rejoin(tool_call_id, on_progress=report_progress)
        if waiter is None:
            return None
        try:
            return outcome_of(await waiter.terminal())
        except asyncio.CancelledError:
            await cancel_task(self._authority, waiter)
            raise


class HandToolSource:
    """The tools of the attached Hands a conversation may use.

    A Hand serves the conversations whose owner or a member is among the principals its
    credential serves (`hub.served_principals`); a conversation with an active Hand sees only
    that one. The Hands attached to the other Minds sharing the database count as this Mind's
    own (`Authority.directory`); a name held here is this Mind's stream.
    """

    def __init__(
        self,
        hub: HandHub,
        authority: Authority,
        audience: Audience,
        active_hand: ActiveHand = lambda _key: "",
    ) -> None:
        self._hub = hub
        self._authority = authority
        self._audience = audience
        self._active_hand = active_hand

    def tools_for(self, conversation_key: str) -> list[Tool]:
        wanted = self._active_hand(conversation_key)
        audience = self._audience(conversation_key)
        tools: list[Tool] = []
        here: set[str] = set()
        for connection in self._hub.connections():
            here.add(connection.name)
            if (wanted and connection.name != wanted) or not connection.may_serve(audience):
                continue
            for decl in connection.tools.values():
                tools.append(RemoteTool(self._authority, connection.name, connection.hand_id, decl))
        for hand in self._authority.directory.hands():
            if hand.name in here or (wanted and hand.name != wanted):
                continue
            if hand.may_serve(audience):
                for decl in hand.tools.values():
                    tools.append(RemoteTool(self._authority, hand.name, hand.hand_id, decl))
        return tools
