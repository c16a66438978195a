"""The index's rows: what of each message, summary and memory entry is indexed, and when.

Indexed is what the conversation's people may see, at most: user and assistant messages,
tool results (their full text when the call was admitted transparent, else the summary a
person is shown) except the recall tool's own, compaction summaries and memory entries.
Notes (observations, background results delivered as notes) are not. A run's messages are
indexed only once it ended and only when it is not sealed (a run is sealed at its start, so
its end says for good); a message outside any run, or appended to a run already ended, is
indexed as it comes.

A branch's copied messages and summary come with its `conversation_created` alone
(`index_conversation`); each copy keeps its origin run, so a sealed turn's copy stays out as
the turn does. A child run's conversation (`delegate`) is not indexed at all: the person does
not see it in their list, and its result is indexed where they do, as the parent's tool
result.

Every function here runs inside the indexer's unit of work (`mind.recall.indexer`), so the
rows it writes commit together with the cursor that says they are done.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from mind.conversation.delegations import is_child
from mind.events.payloads import message_view
from mind.recall.terms import terms_of
from mind.store import models
from mind.tools.base import DetailMode

INDEXED_ROLES = ("user", "assistant", "tool")
# The recall tool's name. Its own results are not indexed: they repeat what they found, and a
# later search would rank an earlier answer above the message it quoted.
RECALL = "recall"
RUNNING = "running"
_PAGE = 500
_ENTRY = models.RecallEntry
_MESSAGE = models.Message


def index_messages(session: Session, messages: Iterable[Any]) -> int:
    """Index the given `messages` rows not yet indexed; returns how many were added."""
    rows = [
        row
        for row in messages
        if row.role in INDEXED_ROLES and (row.payload or {}).get("tool_name") != RECALL
    ]
    if not rows:
        return 0
    done = _indexed(session, "message", [str(row.id) for row in rows])
    values = []
    for row in rows:
        shown = message_view(row, DetailMode.TRANSPARENT).text
        if str(row.id) in done or not shown.strip():
            continue
        values.append(
            _values(row.conversation_key, "message", str(row.id), row.id, row.role, shown)
            | {"run_id": row.run_id or "", "created_at": row.created_at}
        )
    return _insert(session, values)


def index_appended(session: Session, message_ids: Iterable[int], run_ids: Iterable[str]) -> int:
    """Index, in one pass, the messages appended (each when its run, if any, ended unsealed: a
    running run's messages are indexed at its end) and the messages of the ended runs (those
    that ended unsealed). One query each for the messages and their runs, however many."""
    appended = set(message_ids)
    ended = set(run_ids)
    if not appended and not ended:
        return 0
    # Plain rows, not ORM objects: a busy Mind's batch holds hundreds, only read here.
    table = _MESSAGE.__table__
    rows = list(
        session.execute(
            select(table)
            .where(table.c.id.in_(appended) | table.c.run_id.in_(ended))
            .order_by(table.c.id)
        )
    )
    runs = _runs(session, {row.run_id for row in rows if row.run_id} | ended)

    def plain(run_id: str) -> bool:
        run = runs.get(run_id)
        return run is not None and run.state != RUNNING and not run.sealed

    chosen = [
        row
        for row in rows
        if (row.run_id in ended and plain(row.run_id))
        or (row.id in appended and (not row.run_id or row.run_id not in runs or plain(row.run_id)))
    ]
    return index_messages(session, chosen)


def index_conversation(session: Session, conversation_key: str) -> int:
    """Index what a new conversation already holds: a branch's copied messages (those of
    runs that ended unsealed, or of none) and its summary; nothing for any other."""
    added = 0
    after = 0
    while page := _indexable_messages(session, after, conversation_key):
        added += index_messages(session, page)
        after = page[-1].id
    return added + index_summaries(session, conversation_key)


def index_summaries(session: Session, conversation_key: str) -> int:
    """Index the conversation's summaries not yet indexed."""
    rows = list(
        session.scalars(
            select(models.Summary).where(models.Summary.conversation_key == conversation_key)
        )
    )
    done = _indexed(session, "summary", [str(row.id) for row in rows])
    values = [
        _values(
            row.conversation_key,
            "summary",
            str(row.id),
            row.through_message_id,
            "summary",
            row.text,
        )
        | {"created_at": row.created_at}
        for row in rows
        if str(row.id) not in done and row.text.strip()
    ]
    return _insert(session, values)


def index_memory(session: Session, conversation_key: str, key: str, run_id: str = "") -> int:
    """Index a memory entry as it now is (or remove it, when deleted). An entry a sealed run
    wrote is left out."""
    session.execute(
        delete(_ENTRY).where(
            _ENTRY.conversation_key == conversation_key,
            _ENTRY.source == "memory",
            _ENTRY.ref == key,
        )
    )
    if run_id and (run := session.get(models.Run, run_id)) is not None and run.sealed:
        return 0
    entry = session.get(models.MemoryEntry, (conversation_key, key))
    if entry is None or not entry.text.strip():
        return 0
    return _insert(
        session,
        [
            _values(conversation_key, "memory", key, 0, "memory", entry.text)
            | {"created_at": entry.updated_at}
        ],
    )


def backfill(session: Session) -> int:
    """Index everything indexable already stored (the first run, or after the outbox was
    pruned past the cursor)."""
    added = 0
    after = 0
    while page := _indexable_messages(session, after):
        added += index_messages(session, page)
        after = page[-1].id
    for key in session.scalars(select(models.Summary.conversation_key).distinct()):
        added += index_summaries(session, key)
    for conversation_key, key in session.execute(
        select(models.MemoryEntry.conversation_key, models.MemoryEntry.key)
    ):
        added += index_memory(session, conversation_key, key)
    return added


def _indexable_messages(session: Session, after: int, conversation_key: str = "") -> list[Any]:
    """The next page of messages after id `after` of runs ended unsealed (or of none)."""
    plain_runs = select(models.Run.id).where(
        models.Run.sealed.is_(None), models.Run.state != RUNNING
    )
    statement = (
        select(_MESSAGE)
        .where(_MESSAGE.id > after, _MESSAGE.role.in_(INDEXED_ROLES))
        .where(_MESSAGE.run_id.is_(None) | _MESSAGE.run_id.in_(plain_runs))
    )
    if conversation_key:
        statement = statement.where(_MESSAGE.conversation_key == conversation_key)
    return list(session.scalars(statement.order_by(_MESSAGE.id).limit(_PAGE)))


def _runs(session: Session, ids: set[str]) -> dict[str, Any]:
    """The runs of `ids` that exist, by id."""
    if not ids:
        return {}
    run = models.Run
    found = session.execute(select(run.id, run.state, run.sealed).where(run.id.in_(ids)))
    return {row.id: row for row in found}


def _children(session: Session, keys: set[str]) -> set[str]:
    """Which of `keys` are child runs' conversations."""
    found = session.scalars(
        select(models.Conversation.key).where(
            models.Conversation.key.in_(keys), is_child(models.Conversation.key)
        )
    )
    return set(found)


def _indexed(session: Session, source: str, refs: list[str]) -> set[str]:
    if not refs:
        return set()
    found = session.scalars(select(_ENTRY.ref).where(_ENTRY.source == source, _ENTRY.ref.in_(refs)))
    return set(found)


def _values(
    conversation_key: str, source: str, ref: str, message_id: int, role: str, text: str
) -> dict[str, Any]:
    return {
        "conversation_key": conversation_key,
        "source": source,
        "ref": ref,
        "message_id": message_id,
        "run_id": "",
        "role": role,
        "text": text,
        "terms": terms_of(text),
        "embedding": None,
        "embedding_model": "",
    }


def _insert(session: Session, values: list[dict[str, Any]]) -> int:
    """Insert the rows, but none of a child run's conversation."""
    if values:
        children = _children(session, {value["conversation_key"] for value in values})
        values = [value for value in values if value["conversation_key"] not in children]
    if values:
        session.execute(insert(_ENTRY), values)
    return len(values)
