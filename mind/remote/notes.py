"""Where background task results go: a note appended to the task's conversation.

The note is an ordinary append-only message (role `note`) with its `message_appended` event
committed in the same transaction, so every client sees it and the next run's history carries
it to the model. A summary-mode admission stays summary: viewers get the result summary only.
"""

from __future__ import annotations

from mind.conversation.messages import append_message
from mind.conversation.queries import members_of
from mind.remote.model import TaskRecord
from mind.remote.taskservice import summarize_result
from mind.remote.tools import background_note
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx


class BackgroundNotes:
    def __init__(self, database: Database) -> None:
        self._database = database

    async def deliver(self, record: TaskRecord) -> None:
        await self._database.write(lambda tx: _append_note(tx, record))


def _append_note(tx: WriteTx, record: TaskRecord) -> None:
    conversation = tx.session.get(models.Conversation, record.conversation_key)
    if conversation is None:
        return  # deleted meanwhile: nobody to tell
    audience = [conversation.owner, *members_of(tx.session, conversation.key)]
    append_message(
        tx,
        audience,
        key=record.conversation_key,
        run_id=None,
        role="note",
        text=background_note(record),
        payload={
            "source": "remote_task",
            "task_id": record.id,
            "tool_call_id": record.tool_call_id,
            "status": record.state.value,
            "detail_mode": record.detail_mode.value,
            "result_summary": summarize_result(record),
            # Its images (stored with the result) reach the model with the note.
            **({"images": list(record.images)} if record.images else {}),
        },
        mode=record.detail_mode,
    )
