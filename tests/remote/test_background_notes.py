"""A background task's result reaches its conversation as a note with a durable event."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from mind.remote.model import HandResult, NewTask
from mind.remote.notes import BackgroundNotes
from mind.remote.registry import Registry
from mind.store.database import Database
from mind.store.models import Message, OutboxEvent
from mind.tools.base import DetailMode


async def finished_task(registry: Registry, conversation: str, mode: DetailMode):
    spec = NewTask(
        conversation, "run_1", "call_9", "laptop", "build", {"target": "all"}, mode, background=True
    )
    task = await registry.create(spec)
    await registry.accept(task.id, 1, hand_name="laptop")
    report = await registry.finish(
        task.id, 1, HandResult(ok=True, output="secret build log"), hand_name="laptop"
    )
    assert report.task is not None
    return report.task


@pytest.mark.parametrize(
    ("mode", "shown"),
    [(DetailMode.TRANSPARENT, "secret build log"), (DetailMode.SUMMARY, "succeeded, 16 chars")],
)
async def test_background_result_is_appended_as_a_note(
    database: Database,
    database_events: list[OutboxEvent],
    registry: Registry,
    conversation: str,
    mode: DetailMode,
    shown: str,
) -> None:
    record = await finished_task(registry, conversation, mode)
    await BackgroundNotes(database).deliver(record)
    note = await database.read(lambda session: session.execute(select(Message)).scalar_one())
    event = await database.read(lambda session: session.execute(select(OutboxEvent)).scalar_one())
    assert [e.id for e in database_events] == [event.id]  # handed to the bus once committed
    assert note.role == "note" and note.conversation_key == conversation
    assert "laptop__build" in note.text and "secret build log" in note.text  # for the model
    assert note.payload["task_id"] == record.id and note.payload["status"] == "succeeded"
    assert event.type == "message_appended" and event.audience == ["alice"]
    assert shown in event.payload["text"]
    if mode is DetailMode.SUMMARY:
        assert "secret build log" not in event.payload["text"]
