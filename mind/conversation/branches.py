"""Branching a conversation at a message: a new conversation holding a copy of its history.

A branch is a copy, not a pointer into its origin: every conversation stays self-contained,
so nothing done to one (a compaction, a sealed turn's shredding, a deletion) can reach the
other. One unit of work copies, in message order and with their timestamps:

- the messages up to and including the branch point, and the results of the tool calls made
  before it that arrived after it (a call is never separated from its results); a proactive
  run's messages are left out, as from every context; a branch point in a run still running
  is refused (`WrongState`): its step may not be whole yet;
- their tool cards (projections), each call under a new Mind id (a call id is unique across
  the store) that keeps the id the model knew in `provider_id`, so the model is sent the same;
- image references (the bytes are stored once by digest and shared);
- a sealed turn only as a reader without its key sees it (`mind.sealing.forms`): its raw
  values stay under the origin run's key and never reach the branch;
- the latest compaction summary that covers no message past the branch point, as the
  branch's first generation; a later one summarised what the branch does not hold, so the
  branch compacts again when it needs to.

Memory, widgets, approvals and grants are not copied: they are a conversation's state now,
not its history at the branch point. The branch belongs to its caller (no members) and runs
with its origin's profile; it records where it came from.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import exists, select

from mind.conversation import queries
from mind.conversation.access import Viewer
from mind.conversation.limits import MAX_TITLE
from mind.conversation.runs import PROACTIVE_TRIGGER
from mind.errors import NotFound, WrongState
from mind.sealing.forms import SEALED, open_message, open_projection
from mind.sealing.keyring import KeyRing, Queried, SealState
from mind.store import models
from mind.store.write_tx import WriteTx

BRANCH_SUFFIX = " (branch)"


@dataclass(frozen=True)
class Branched:
    conversation: models.Conversation
    messages_copied: int


def default_title(origin: models.Conversation) -> str:
    base = origin.title or origin.key
    return base[: MAX_TITLE - len(BRANCH_SUFFIX)] + BRANCH_SUFFIX


def branch(
    tx: WriteTx, viewer: Viewer, origin_key: str, message_id: int, key: str, title: str
) -> Branched:
    """Create conversation `key`, owned by `viewer`, as a branch of `origin_key` at
    `message_id` (NotFound for a conversation the viewer cannot read or a message not its
    own, WrongState inside a running run); the caller announces it."""
    origin, _ = queries.visible(tx.session, viewer, origin_key)
    point = tx.session.get(models.Message, message_id)
    if point is None or point.conversation_key != origin_key:
        raise NotFound(f"no message {message_id} in conversation {origin_key!r}")
    _refuse_running(tx, origin_key, message_id)
    rows = _copied_rows(tx, origin_key, message_id)
    row = models.Conversation(
        key=key,
        owner=viewer.principal,
        title=title or default_title(origin),
        created_at=datetime.now(UTC),
        # The origin owner's Hand is theirs to choose; anyone else chooses their own.
        active_hand=origin.active_hand if origin.owner == viewer.principal else "",
        profile=origin.profile,
        branched_from_key=origin_key,
        branched_from_message_id=message_id,
    )
    tx.session.add(row)
    tx.session.flush()
    ring = _shredded_ring(tx, rows)
    ids, calls = _copy_messages(tx, key, [open_message(r, ring) for r in rows])
    _copy_projections(tx, key, calls, ring)
    if _copy_summary(tx, origin_key, key, message_id, ids):
        row.context_generation = 1
        tx.session.flush()
    return Branched(row, len(rows))


def _refuse_running(tx: WriteTx, key: str, message_id: int) -> None:
    running = tx.session.scalar(
        select(models.Run.id).where(
            models.Run.conversation_key == key, models.Run.state == "running"
        )
    )
    if running is None:
        return
    inside = tx.session.scalar(
        select(models.Message.id)
        .where(
            models.Message.conversation_key == key,
            models.Message.run_id == running,
            models.Message.id <= message_id,
        )
        .limit(1)
    )
    if inside is not None:
        raise WrongState(
            f"message {message_id} is part of run {running}, which is still running: branch "
            "once it has ended, or at a message before it"
        )


_NOT_PROACTIVE = ~exists().where(
    models.Run.id == models.Message.run_id, models.Run.trigger == PROACTIVE_TRIGGER
)


def _copied_rows(tx: WriteTx, key: str, message_id: int) -> list[models.Message]:
    """The messages up to `message_id`, then the results after it of calls made up to it."""
    rows = list(
        tx.session.scalars(
            select(models.Message)
            .where(
                models.Message.conversation_key == key,
                models.Message.id <= message_id,
                _NOT_PROACTIVE,
            )
            .order_by(models.Message.id)
        )
    )
    answered = {(r.payload or {}).get("tool_call_id") for r in rows if r.role == "tool"}
    waiting = {
        call["id"]: r.run_id
        for r in rows
        for call in (r.payload or {}).get("tool_calls", [])
        if call["id"] not in answered
    }
    runs = {run for run in waiting.values() if run}
    if not runs:
        return rows
    later = tx.session.scalars(
        select(models.Message)
        .where(
            models.Message.conversation_key == key,
            models.Message.id > message_id,
            models.Message.role == "tool",
            models.Message.run_id.in_(runs),
        )
        .order_by(models.Message.id)
    )
    return rows + [r for r in later if (r.payload or {}).get("tool_call_id") in waiting]


def _shredded_ring(tx: WriteTx, rows: Iterable[models.Message]) -> KeyRing:
    """A ring holding no key: every sealed value reads as its run's shredded form, with the
    datasets its run queried (or nothing, when the run kept its key)."""
    sealed_by = {
        str(payload[SEALED]["sealed_by"])
        for payload in (r.payload or {} for r in rows)
        if SEALED in payload
    }
    redactions: dict[str, tuple[Queried, ...]] = {}
    if sealed_by:
        found = tx.session.execute(
            select(models.Run.id, models.Run.redaction).where(models.Run.id.in_(sealed_by))
        )
        redactions = {
            run: tuple(Queried.from_json(item) for item in redaction or [])
            for run, redaction in found
        }
    return KeyRing(lambda run: SealState(None, redactions.get(run, ())))


def _copy_messages(tx: WriteTx, key: str, rows: list[Any]) -> tuple[dict[int, int], dict[str, str]]:
    """Append the copies; (old message id → new, old call id → new)."""
    ids: dict[int, int] = {}
    calls: dict[str, str] = {}
    for row in rows:
        payload = dict(row.payload or {})
        if payload.get("tool_calls"):
            payload["tool_calls"] = [_renamed(call, calls) for call in payload["tool_calls"]]
        if row.role == "tool" and payload.get("tool_call_id") in calls:
            payload["tool_call_id"] = calls[payload["tool_call_id"]]
        quote = payload.get("quote")
        if quote and quote.get("message_id") in ids:
            payload["quote"] = {**quote, "message_id": ids[quote["message_id"]]}
        copy = tx.insert(
            models.Message(
                conversation_key=key,
                run_id=row.run_id,
                role=row.role,
                text=row.text,
                payload=payload,
                created_at=row.created_at,
            )
        )
        ids[row.id] = copy.id
    return ids, calls


def _renamed(call: dict[str, Any], calls: dict[str, str]) -> dict[str, Any]:
    """The call under a new Mind id; the model keeps seeing the id it knew."""
    new_id = f"call_{uuid.uuid4().hex}"
    calls[call["id"]] = new_id
    return {**call, "id": new_id, "provider_id": call.get("provider_id") or call["id"]}


def _copy_projections(tx: WriteTx, key: str, calls: dict[str, str], ring: KeyRing) -> None:
    if not calls:
        return
    rows = tx.session.scalars(
        select(models.ToolProjection).where(models.ToolProjection.tool_call_id.in_(calls))
    )
    columns = models.ToolProjection.__table__.columns
    for row in list(rows):
        opened = open_projection(row, ring)
        values = {column.key: getattr(opened, column.key) for column in columns}
        values.update(tool_call_id=calls[row.tool_call_id], conversation_key=key)
        tx.insert_values(models.ToolProjection, values)


def _copy_summary(
    tx: WriteTx, origin_key: str, key: str, message_id: int, ids: dict[int, int]
) -> bool:
    """Copy the origin's latest summary covering nothing past the branch point; whether one
    was copied (a summary standing for no copied message is not)."""
    summary = tx.session.scalar(
        select(models.Summary)
        .where(
            models.Summary.conversation_key == origin_key,
            models.Summary.through_message_id <= message_id,
        )
        .order_by(models.Summary.generation.desc())
        .limit(1)
    )
    if summary is None:
        return False
    covered = [new for old, new in ids.items() if old <= summary.through_message_id]
    if not covered:
        return False
    tx.insert(
        models.Summary(
            conversation_key=key,
            through_message_id=max(covered),
            generation=1,
            version=summary.version,
            text=summary.text,
            environment=summary.environment,
            created_at=summary.created_at,
        )
    )
    return True
