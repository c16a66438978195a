"""Invariants the database itself holds, whatever code writes to it (run on every backend)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql import Executable

from mind.store.database import Database
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

KEY = "p_alice"


async def add(database: Database, *rows: object) -> None:
    await database.write(lambda tx: tx.session.add_all(rows))


async def execute(database: Database, statement: Executable) -> None:
    await database.write(lambda tx: tx.session.execute(statement))


async def refused(database: Database, statement: Executable, reason: str) -> None:
    """Run `statement` in its own transaction and require the database to refuse it."""
    with pytest.raises(IntegrityError, match=reason):
        await execute(database, statement)


@pytest.fixture
async def conversation(database: Database) -> str:
    await add(database, Conversation(key=KEY, owner="alice"))
    return KEY


async def test_conversation_keys_must_be_private_or_group(database: Database) -> None:
    await add(database, Conversation(key="g_team", owner="alice"))
    with pytest.raises(IntegrityError):
        await add(database, Conversation(key="x_other", owner="alice"))


async def test_second_terminal_transition_for_a_task_is_refused(
    database: Database, conversation: str
) -> None:
    await add(
        database,
        RemoteRun(id="rr1", conversation_key=conversation, hand_name="laptop"),
        Task(id="t1", remote_run_id="rr1", tool_call_id="c1", hand_name="laptop", tool="echo"),
    )
    await add(
        database,
        TaskTransition(task_id="t1", attempt=1, from_state="offered", to_state="accepted"),
        TaskTransition(
            task_id="t1", attempt=1, from_state="accepted", to_state="succeeded", terminal=True
        ),
    )
    with pytest.raises(IntegrityError):
        await add(
            database,
            TaskTransition(
                task_id="t1", attempt=1, from_state="accepted", to_state="lost", terminal=True
            ),
        )
    states = await database.read(
        lambda session: session.scalars(select(TaskTransition.to_state)).all()
    )
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


async def test_second_approval_decision_is_refused(database: Database, conversation: str) -> None:
    await add(database, approval(conversation))
    decide = update(Approval).where(Approval.id == "ap1")
    await execute(database, decide.values(decision="approve_once", decided_by="alice"))
    await refused(database, decide.values(decision="deny", decided_by="mallory"), "decided once")
    await refused(database, decide.values(decision_reason="rewritten"), "decided once")
    stored = await database.read(lambda session: session.get(Approval, "ap1"))
    assert stored is not None
    assert (stored.decision, stored.decided_by) == ("approve_once", "alice")


async def test_projection_terminal_cannot_be_rewritten(
    database: Database, conversation: str
) -> None:
    await add(
        database,
        ToolProjection(
            tool_call_id="c1",
            conversation_key=conversation,
            run_id="run1",
            tool="echo",
            admitted_mode="summary",
        ),
    )
    projection = update(ToolProjection).where(ToolProjection.tool_call_id == "c1")
    await execute(database, projection.values(status="succeeded", result_summary="ok"))
    await refused(database, projection.values(status="failed"), "written once")
    await refused(database, projection.values(result_summary="rewritten"), "written once")
    stored = await database.read(lambda session: session.get(ToolProjection, "c1"))
    assert stored is not None
    assert (stored.status, stored.result_summary) == ("succeeded", "ok")


async def test_message_update_is_refused(database: Database, conversation: str) -> None:
    await add(database, Message(conversation_key=conversation, role="user", text="hello"))
    await refused(database, update(Message).values(text="edited"), "append-only")
    texts = await database.read(lambda session: session.scalars(select(Message.text)).all())
    assert texts == ["hello"]


async def test_deleting_a_conversation_removes_its_messages(
    database: Database, conversation: str
) -> None:
    await add(database, Message(conversation_key=conversation, role="user", text="hello"))
    await execute(database, delete(Conversation).where(Conversation.key == conversation))
    assert await database.read(lambda session: session.scalars(select(Message)).all()) == []


async def test_at_most_one_running_run_per_conversation(
    database: Database, conversation: str
) -> None:
    await add(database, Run(id="r1", conversation_key=conversation))
    with pytest.raises(IntegrityError):
        await add(database, Run(id="r2", conversation_key=conversation))
    await execute(database, update(Run).where(Run.id == "r1").values(state="completed"))
    await add(database, Run(id="r2", conversation_key=conversation))
    await add(
        database, Conversation(key="p_bob", owner="bob"), Run(id="r3", conversation_key="p_bob")
    )


async def test_idempotency_key_is_unique_per_conversation(
    database: Database, conversation: str
) -> None:
    def send(key: str) -> Input:
        return Input(conversation_key=key, idempotency_key="k1", principal="alice", text="hi")

    await add(database, send(conversation))
    with pytest.raises(IntegrityError):
        await add(database, send(conversation))
    await add(database, Conversation(key="g_team", owner="alice"), send("g_team"))
    inputs = await database.read(lambda session: session.scalars(select(Input)).all())
    assert len(inputs) == 2


async def test_timestamps_read_back_as_aware_utc(database: Database, conversation: str) -> None:
    local = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5)))
    await add(database, Run(id="r1", conversation_key=conversation, started_at=local))
    stored = await database.read(lambda session: session.get(Run, "r1"))
    assert stored is not None
    assert stored.started_at == local
    assert stored.started_at.utcoffset() == timedelta(0)
