"""A cancelled Hand call records what happened to its task: the call's terminal and the task's
never disagree (real HandLink server and SDK Hand in this process, real store)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from remote_harness import CONVERSATION, Link, remote_settings
from test_task_lifecycle import add_stubborn_tool, single_task

from hand import Hand
from mind.conversation.history import HistoryMessage
from mind.core.tool_runtime import Admission, RunScope, Terminal, ToolRuntime
from mind.providers.base import ToolCall
from mind.remote.model import TaskState
from mind.tools.authorizer import Verdict
from mind.tools.base import DetailMode


class AllowAll:
    def begin_shutdown(self) -> None: ...

    async def authorize(self, call: Any) -> Verdict:
        return Verdict.allow()


class Terminals:
    """The runtime's durable writes, kept in memory."""

    def __init__(self) -> None:
        self.finished: list[Terminal] = []

    async def admit(self, admission: Admission) -> None: ...

    async def finish(self, terminal: Terminal) -> HistoryMessage:
        self.finished.append(terminal)
        return HistoryMessage(
            id=len(self.finished),
            role="tool",
            text=terminal.model_text,
            created_at=datetime.now(UTC),
            tool_call_id=terminal.tool_call_id,
        )

    async def skip(self, admission: Admission, terminal: Terminal) -> HistoryMessage:
        return await self.finish(terminal)


def scope(journal: Terminals) -> RunScope:
    return RunScope(
        conversation_key=CONVERSATION,
        run_id="run_1",
        principal="alice",
        detail_mode=DetailMode.TRANSPARENT,
        journal=journal,
        report_progress=lambda *_: None,
    )


async def cancel_during(link: Link, tool: str, started: asyncio.Event) -> Terminals:
    runtime = ToolRuntime(AllowAll(), ledger=link.remote.ledger)  # type: ignore[arg-type]
    journal = Terminals()
    call = ToolCall(id="call_1", name=f"laptop__{tool}", arguments={}, raw_arguments="{}")
    tools = {t.name: t for t in link.remote.tools.tools_for(CONVERSATION)}
    running = asyncio.create_task(runtime.execute(call, tools[call.name], scope(journal)))
    await asyncio.wait_for(started.wait(), 10)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    return journal


async def test_a_hand_that_finishes_while_asked_to_stop_makes_the_call_succeed(
    link: Link, serve
) -> None:
    hand = Hand("laptop")
    started = add_stubborn_tool(hand)
    await serve(hand, link.target, link.token)
    journal = await cancel_during(link, "stubborn", started)
    record, terminals = await single_task(link)
    assert record.state is TaskState.SUCCEEDED and terminals == ["succeeded"]
    ((terminal,),) = [journal.finished]
    assert terminal.status == "succeeded" and terminal.model_text == "finished anyway"


@pytest.mark.parametrize("link_settings", [remote_settings(cancel_wait=0.5)], indirect=True)
async def test_a_hand_that_never_confirms_a_cancel_gets_its_task_cancelled_by_the_mind(
    link: Link, serve
) -> None:
    hand, started, release = Hand("laptop"), asyncio.Event(), asyncio.Event()

    @hand.tool
    async def deaf() -> str:
        """Ignores cancellation until the test releases it, long after the Mind stopped waiting."""
        started.set()
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue
        return "done at last"

    await serve(hand, link.target, link.token)
    try:
        journal = await cancel_during(link, "deaf", started)
        record, terminals = await single_task(link)
    finally:
        release.set()
    assert record.state is TaskState.CANCELLED and terminals == ["cancelled"]
    assert "did not confirm the cancel within 0.5 s" in record.error
    ((terminal,),) = [journal.finished]
    assert terminal.status == "cancelled"
