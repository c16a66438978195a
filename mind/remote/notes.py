"""Where background task results go: a note appended to the task's conversation.

The note is an ordinary append-only message (role `note`) with its `message_appended` event
committed in the same transaction, so every client sees it and the next run's history carries
it to the model. A summary-mode admission stays summary: viewers get the result summary only.
"""

from __future__ import annotations

from datetime import UTC, datetime

from mind.conversation.queries import members_of
from mind.conversation.storage import Storage
from mind.events.payloads import message_view
from mind.remote.model import TaskRecord
from mind.remote.taskservice import summarize_result
from mind.remote.tools import background_note
from mind.store import models


class BackgroundNotes:
    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    async def deliver(self, record: TaskRecord) -> None:
        async with self._storage.write() as tx:
            conversation = await tx.session.get(models.Conversation, record.conversation_key)
            if conversation is None:
                return  # deleted meanwhile: nobody to tell
            audience = [conversation.owner, *await members_of(tx.session, conversation.key)]
            message = models.Message(
                conversation_key=record.conversation_key,
                role="note",
                text=background_note(record),
                payload={
                    "source": "remote_task",
                    "task_id": record.id,
                    "tool_call_id": record.tool_call_id,
                    "status": record.state.value,
                    "detail_mode": record.detail_mode.value,
                    "result_summary": summarize_result(record),
                },
                created_at=datetime.now(UTC),
            )
            tx.session.add(message)
            await tx.session.flush()
            await tx.event(
                "message_appended",
                record.conversation_key,
                audience,
                message_view(message, record.detail_mode.value),
            )
