"""The stored side of a conversation's context: its latest summary, the messages after it, and
the compare-and-set commit of a new summary."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import bindparam, exists, select, update

from mind.conversation.history import ContextSummary, HistoryMessage
from mind.conversation.media import digests_of, read_images
from mind.conversation.records import history_message
from mind.conversation.runs import PROACTIVE_TRIGGER
from mind.errors import NotFound
from mind.events.views import CompactionView
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx

# The format of `summaries.text` this release writes and reads.
SUMMARY_VERSION = 1

LATEST_SUMMARY = (
    select(models.Summary.__table__)
    .where(models.Summary.conversation_key == bindparam("key"))
    .order_by(models.Summary.generation.desc())
    .limit(1)
)

# The context a conversation's runs are built from: a proactive run's messages (its firing
# note, its steps and tool results) are left out, so no later run sees them; what it sent is
# a post, which belongs to no run and stays.
MESSAGES_AFTER = (
    select(models.Message.__table__)
    .where(
        models.Message.conversation_key == bindparam("key"),
        models.Message.id > bindparam("after"),
        ~exists().where(
            models.Run.id == models.Message.run_id, models.Run.trigger == PROACTIVE_TRIGGER
        ),
    )
    .order_by(models.Message.id)
)


class SummaryConflict(Exception):
    """The conversation's context changed since the compaction read it; read again.

    Internal: the compaction engine catches it and starts over from the new state."""


def summary_of(row: object | None) -> ContextSummary | None:
    if row is None:
        return None
    return ContextSummary(
        generation=row.generation,  # type: ignore[attr-defined]
        version=row.version,  # type: ignore[attr-defined]
        through_message_id=row.through_message_id,  # type: ignore[attr-defined]
        text=row.text,  # type: ignore[attr-defined]
        environment=row.environment,  # type: ignore[attr-defined]
        created_at=row.created_at,  # type: ignore[attr-defined]
    )


@dataclass(frozen=True)
class StoredContext:
    """What stands for a conversation's history: its latest summary and the messages after."""

    summary: ContextSummary | None
    messages: list[HistoryMessage]

    @property
    def generation(self) -> int:
        return self.summary.generation if self.summary else 0


async def latest_summary(database: Database, key: str) -> ContextSummary | None:
    return summary_of(await database.first(LATEST_SUMMARY, key=key))


async def load(database: Database, key: str) -> StoredContext:
    """Two indexed reads, whatever the length of the history the summary covers (and one of
    the images the messages after it carry)."""
    summary = await latest_summary(database, key)
    after = summary.through_message_id if summary else 0
    rows = await database.rows(MESSAGES_AFTER, key=key, after=after)
    digests = digests_of(row.payload for row in rows)
    images = await database.read(lambda session: read_images(session, digests)) if digests else {}
    return StoredContext(summary, [history_message(row, images) for row in rows])


def commit_summary(
    tx: WriteTx,
    *,
    key: str,
    audience: list[str],
    base: ContextSummary | None,
    summary: ContextSummary,
    view: CompactionView,
) -> None:
    """Store `summary` and its event if the conversation's context is still at `base`.

    Compare-and-set on the conversation's generation (and the base summary's version): a
    compaction that started from an older state raises `SummaryConflict` and writes nothing.
    """
    conversation = tx.session.get(models.Conversation, key)
    if conversation is None:
        raise NotFound(f"conversation {key} does not exist")
    current = summary_of(tx.first(LATEST_SUMMARY, key=key))
    base_state = (base.generation, base.version) if base else (0, SUMMARY_VERSION)
    current_state = (current.generation, current.version) if current else (0, SUMMARY_VERSION)
    if current_state != base_state:
        raise SummaryConflict(f"{key}: context at {current_state}, compaction read {base_state}")
    moved = tx.session.execute(
        update(models.Conversation)
        .where(
            models.Conversation.key == key,
            models.Conversation.context_generation == base_state[0],
        )
        .values(context_generation=summary.generation)
    )
    if moved.rowcount != 1:  # type: ignore[attr-defined]
        raise SummaryConflict(f"{key}: context generation moved past {base_state[0]}")
    tx.session.add(
        models.Summary(
            conversation_key=key,
            through_message_id=summary.through_message_id,
            generation=summary.generation,
            version=summary.version,
            text=summary.text,
            environment=summary.environment,
            created_at=summary.created_at,
        )
    )
    tx.event("context_compacted", key, audience, view.to_payload())
