"""Invariants the database itself holds, whatever code writes to it (run on every backend)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mind.store.models import (
    Approval,
    Conversation,
    Input,
    Message,
    RemoteRun,
    Run,
    Task,
    TaskTransition,
    ToolProjection,
)

Sessions = async_sessionmaker[AsyncSession]
KEY = "p_alice"


async def add(sessions: Sessions, *rows: object) -> None:
    async with sessions() as session, session.begin():
        session.add_all(rows)


async def refused(sessions: Sessions, statement: object, reason: str) -> None:
    """Run `statement` in its own transaction and require the database to refuse it."""
    with pytest.raises(IntegrityError, match=reason):
        async with sessions() as session, session.begin():
            await session.execute(statement)


@pytest.fixture
async def conversation(sessions: Sessions) -> str:
    await add(sessions, Conversation(key=KEY, owner="alice"))
    return KEY


async def test_conversation_keys_must_be_private_or_group(sessions: Sessions) -> None:
    await add(sessions, Conversation(key="g_team", owner="alice"))
    with pytest.raises(IntegrityError):
        await add(sessions, Conversation(key="x_other", owner="alice"))


async def test_second_terminal_transition_for_a_task_is_refused(
    sessions: Sessions, conversation: str
) -> None:
    await add(
        sessions,
        RemoteRun(id="rr1", conversation_key=conversation, hand_name="laptop"),
        Task(id="t1", remote_run_id="rr1", tool_call_id="c1", hand_name="laptop", tool="echo"),
    )
    await add(
        sessions,
        TaskTransition(task_id="t1", attempt=1, from_state="offered", to_state="accepted"),
        TaskTransition(
            task_id="t1", attempt=1, from_state="accepted", to_state="succeeded", terminal=True
        ),
    )
    with pytest.raises(IntegrityError):
        await add(
            sessions,
            TaskTransition(
                task_id="t1", attempt=1, from_state="accepted", to_state="lost", terminal=True
            ),
        )
    async with sessions() as session:
        states = (await session.scalars(select(TaskTransition.to_state))).all()
    assert sorted(states) == ["accepted", "succeeded"]


def approval(conversation: str, approval_id: str = "ap1") -> Approval:
    return Approval(
        id=approval_id,
        conversation_key=conversation,
        run_id="run1",
        tool_call_id=f"call-{approval_id}",
        tool="shell",
        effect="external_side_effect",
        arguments_digest="0" * 64,
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
    )


async def test_second_approval_decision_is_refused(sessions: Sessions, conversation: str) -> None:
    await add(sessions, approval(conversation))
    decide = update(Approval).where(Approval.id == "ap1")
    async with sessions() as session, session.begin():
        await session.execute(decide.values(decision="approve_once", decided_by="alice"))
    await refused(sessions, decide.values(decision="deny", decided_by="mallory"), "decided once")
    await refused(sessions, decide.values(decision_reason="rewritten"), "decided once")
    async with sessions() as session:
        stored = await session.get(Approval, "ap1")
    assert stored is not None
    assert (stored.decision, stored.decided_by) == ("approve_once", "alice")


async def test_projection_terminal_cannot_be_rewritten(
    sessions: Sessions, conversation: str
) -> None:
    await add(
        sessions,
        ToolProjection(
            tool_call_id="c1",
            conversation_key=conversation,
            run_id="run1",
            tool="echo",
            admitted_mode="summary",
        ),
    )
    projection = update(ToolProjection).where(ToolProjection.tool_call_id == "c1")
    async with sessions() as session, session.begin():
        await session.execute(projection.values(status="succeeded", result_summary="ok"))
    await refused(sessions, projection.values(status="failed"), "written once")
    await refused(sessions, projection.values(result_summary="rewritten"), "written once")
    async with sessions() as session:
        stored = await session.get(ToolProjection, "c1")
    assert stored is not None
    assert (stored.status, stored.result_summary) == ("succeeded", "ok")


async def test_message_update_is_refused(sessions: Sessions, conversation: str) -> None:
    await add(sessions, Message(conversation_key=conversation, role="user", text="hello"))
    await refused(sessions, update(Message).values(text="edited"), "append-only")
    async with sessions() as session:
        assert (await session.scalars(select(Message.text))).all() == ["hello"]


async def test_deleting_a_conversation_removes_its_messages(
    sessions: Sessions, conversation: str
) -> None:
    await add(sessions, Message(conversation_key=conversation, role="user", text="hello"))
    async with sessions() as session, session.begin():
        await session.execute(delete(Conversation).where(Conversation.key == conversation))
    async with sessions() as session:
        assert (await session.scalars(select(Message))).all() == []


async def test_at_most_one_running_run_per_conversation(
    sessions: Sessions, conversation: str
) -> None:
    await add(sessions, Run(id="r1", conversation_key=conversation))
    with pytest.raises(IntegrityError):
        await add(sessions, Run(id="r2", conversation_key=conversation))
    async with sessions() as session, session.begin():
        await session.execute(update(Run).where(Run.id == "r1").values(state="completed"))
    await add(sessions, Run(id="r2", conversation_key=conversation))
    await add(
        sessions, Conversation(key="p_bob", owner="bob"), Run(id="r3", conversation_key="p_bob")
    )


async def test_idempotency_key_is_unique_per_conversation(
    sessions: Sessions, conversation: str
) -> None:
    def send(key: str) -> Input:
        return Input(conversation_key=key, idempotency_key="k1", principal="alice", text="hi")

    await add(sessions, send(conversation))
    with pytest.raises(IntegrityError):
        await add(sessions, send(conversation))
    await add(sessions, Conversation(key="g_team", owner="alice"), send("g_team"))
    async with sessions() as session:
        assert len((await session.scalars(select(Input))).all()) == 2


async def test_timestamps_read_back_as_aware_utc(sessions: Sessions, conversation: str) -> None:
    local = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5)))
    await add(sessions, Run(id="r1", conversation_key=conversation, started_at=local))
    async with sessions() as session:
        stored = await session.get(Run, "r1")
    assert stored is not None
    assert stored.started_at == local
    assert stored.started_at.utcoffset() == timedelta(0)
