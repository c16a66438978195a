"""Cancelling a child while none of its runs is active (its task still queued, or its call
left open by a restart waiting for an approval) ends everything that would start it later:
the queued task is dropped, the open call ends cancelled and its approval is decided, so no
decision made afterwards runs anything. `ChildRuns.cancel` with a real store and Broker; the
actor pool is replaced by one that has no active run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from mind.agent.delegation import ChildRuns
from mind.approvals.broker import ApprovalBroker
from mind.approvals.errors import ApprovalAlreadyDecided
from mind.conversation import delegations, inputs, runs
from mind.conversation.continuation import interrupted_open_calls
from mind.events.bus import EventBus
from mind.events.views import RunState
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.authorizer import CallUnderReview, Decision
from mind.tools.base import DetailMode, Effect

PARENT = "p_parent"
CALL = "call_0123456789abcdef0123456789abcdef"
CHILD_CALL = "call_fedcba9876543210fedcba9876543210"


class NoActiveRuns:
    """The actor pool as `ChildRuns.cancel` sees it when the child has no active run."""

    async def cancel_run(self, key: str, reason: str) -> bool:
        return False


def start(tx: WriteTx) -> models.Delegation:
    tx.session.add(models.Conversation(key=PARENT, owner="alice"))
    return delegations.start(
        tx,
        tool_call_id=CALL,
        parent_key=PARENT,
        parent_run_id="run_parent",
        principal="alice",
        task="mark it",
        profile="",
        mode="transparent",
        tools=frozenset({"laptop__mark"}),
        depth=1,
        max_turns=4,
        max_tokens=1000,
        deadline_at=datetime.now(UTC) + timedelta(minutes=5),
    )


@pytest.fixture
async def broker(database: Database) -> ApprovalBroker:
    return ApprovalBroker(database, expiry=600)


def child_runs(database: Database, broker: ApprovalBroker) -> ChildRuns:
    return ChildRuns(database, NoActiveRuns(), EventBus(), broker)  # type: ignore[arg-type]


async def test_cancelling_a_child_whose_task_is_queued_drops_the_task(
    database: Database, broker: ApprovalBroker
) -> None:
    child = (await database.write(start)).child_key
    await child_runs(database, broker).cancel(CALL, "its parent run was cancelled")

    row = await database.read(lambda s: delegations.of_call(s, CALL))
    assert row is not None and row.state == delegations.CANCELLED
    assert child not in await database.read(inputs.conversations_with_queued)


async def test_cancelling_a_child_waiting_on_an_approval_after_a_restart_ends_the_approval(
    database: Database, broker: ApprovalBroker
) -> None:
    child = (await database.write(start)).child_key

    def interrupted_waiting(tx: WriteTx) -> str:
        (task,) = inputs.queued(tx, child)
        run = runs.start(tx, key=child, trigger="user", mode="transparent", audience=["alice"])
        inputs.deliver(tx, task, run.id, ["alice"])
        tx.insert(
            models.ToolProjection(
                tool_call_id=CHILD_CALL,
                conversation_key=child,
                run_id=run.id,
                tool="laptop__mark",
                admitted_mode="transparent",
            )
        )
        return run.id

    run_id = await database.write(interrupted_waiting)
    call = CallUnderReview(
        tool="laptop__mark",
        effect=Effect.EXTERNAL_SIDE_EFFECT,
        hand_id="laptop",
        arguments={"label": "a"},
        conversation_key=child,
        run_id=run_id,
        tool_call_id=CHILD_CALL,
        principal="alice",
        detail_mode=DetailMode.TRANSPARENT,
        decision_text="mark a",
    )
    approval = await broker.request(call, arguments_summary="label=a", reason="asks")
    await database.write(
        lambda tx: runs.finish(
            tx,
            run_id,
            state=RunState.INTERRUPTED,
            reason="the Mind stopped",
            audience=["alice"],
            keep_open=[CHILD_CALL],
        )
    )
    assert [c.tool_call_id for c in await database.read(interrupted_open_calls)] == [CHILD_CALL]

    await child_runs(database, broker).cancel(CALL, "its parent run was cancelled")

    assert await database.read(interrupted_open_calls) == []
    status = await database.read(
        lambda s: s.scalar(
            select(models.ToolProjection.status).where(
                models.ToolProjection.tool_call_id == CHILD_CALL
            )
        )
    )
    assert status == "cancelled"
    decided = await broker.get(approval.id)
    assert decided is not None and decided.decision is Decision.DENY
    with pytest.raises(ApprovalAlreadyDecided):
        await broker.decide(approval.id, Decision.APPROVE_ONCE, principal="alice")
