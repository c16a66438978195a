"""The inputs queue: user messages accepted by SendChat, delivered to runs in order, and the
posts (`mind.conversation.posts`) waiting in the same order for the active run to end."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from mind.conversation import posts, quotes, sources
from mind.conversation.messages import append_message
from mind.events.payloads import queued_view
from mind.store import models
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode

_COLUMNS = models.Input.__table__
BY_IDEMPOTENCY_KEY = select(_COLUMNS).where(
    models.Input.conversation_key == bindparam("key"),
    models.Input.idempotency_key == bindparam("idempotency_key"),
)
_QUEUED = (
    select(_COLUMNS)
    .where(models.Input.conversation_key == bindparam("key"), models.Input.state == "queued")
    .order_by(models.Input.id)
)
_QUEUED_STEERS = _QUEUED.where(models.Input.steer.is_(True))
OLDEST_QUEUED = _QUEUED.limit(1)
_DELIVERED = (
    update(models.Input)
    .where(models.Input.id == bindparam("input_id"))
    .values(state="delivered", message_id=bindparam("message_id"), run_id=bindparam("run_id"))
)
_POST_DELIVERED = (
    update(models.Input)
    .where(models.Input.id == bindparam("input_id"))
    .values(state="delivered", message_id=bindparam("message_id"))
)


def find(tx: WriteTx, key: str, idempotency_key: str) -> Any | None:
    """The input sent with `idempotency_key` (a row of `inputs`), if any."""
    return tx.first(BY_IDEMPOTENCY_KEY, key=key, idempotency_key=idempotency_key)


def oldest_queued(tx: WriteTx, key: str) -> Any | None:
    return tx.first(OLDEST_QUEUED, key=key)


def queued(tx: WriteTx, key: str, *, steer_only: bool = False) -> list[Any]:
    return tx.rows(_QUEUED_STEERS if steer_only else _QUEUED, key=key)


def drop_queued(tx: WriteTx, key: str) -> None:
    """Drop every input still queued in conversation `key`: none of them starts a run."""
    tx.session.execute(
        update(models.Input)
        .where(models.Input.conversation_key == key, models.Input.state == "queued")
        .values(state="dropped")
    )


def conversations_with_queued(session: Session) -> list[str]:
    rows = session.scalars(
        select(models.Input.conversation_key).where(models.Input.state == "queued").distinct()
    )
    return list(rows)


def accept(
    tx: WriteTx,
    *,
    key: str,
    principal: str,
    text: str,
    idempotency_key: str,
    steer: bool,
    mode: str,
    source: sources.InputSource = sources.PERSON,
    images: list[dict[str, Any]] | None = None,
    reply_to: int | None = None,
    forwarded: list[dict[str, Any]] | None = None,
    state: str = "queued",
) -> models.Input:
    """Store a new input, queued (no event: the caller delivers it or announces it).

    `images` are references to rows of `media` the same unit stored, as are the images of
    the `forwarded` record; `reply_to` was checked (`mind.conversation.quotes`). An input recorded
    `dropped` is never delivered: it keeps an idempotency key for a request that started no
    run (`mind.agent.action_decisions`)."""
    row = models.Input(
        conversation_key=key,
        idempotency_key=idempotency_key,
        principal=principal,
        text=text,
        steer=steer,
        detail_mode=mode,
        source=sources.to_json(source),
        images=images or [],
        reply_to=reply_to,
        forwarded=forwarded or [],
        state=state,
        created_at=datetime.now(UTC),
    )
    return tx.insert(row)


def enqueue(
    tx: WriteTx,
    *,
    key: str,
    principal: str,
    text: str,
    idempotency_key: str,
    steer: bool,
    mode: str,
    active_run_id: str,
    audience: list[str],
    source: sources.InputSource = sources.PERSON,
    images: list[dict[str, Any]] | None = None,
    reply_to: int | None = None,
    forwarded: list[dict[str, Any]] | None = None,
) -> models.Input:
    """Store a new input that waits behind an active run, and announce it."""
    row = accept(
        tx,
        key=key,
        principal=principal,
        text=text,
        idempotency_key=idempotency_key,
        steer=steer,
        mode=mode,
        source=source,
        images=images,
        reply_to=reply_to,
        forwarded=forwarded,
    )
    tx.event("message_queued", key, audience, queued_view(row, active_run_id).to_payload())
    return row


def deliver(tx: WriteTx, row: Any, run_id: str, audience: list[str]) -> models.Message:
    """Turn a queued input into the message of `run_id` (history order = delivery order).

    A person's input becomes a user message; any other (an observation, a firing, a
    decision) becomes a runtime note, which the model sees as platform data, not as the user
    speaking. The note's payload keeps the source as stored.
    """
    by_person = isinstance(sources.from_json(row.source), sources.PersonSource)
    quote = quotes.quote_at_delivery(tx, row.conversation_key, row.reply_to)
    message = append_message(
        tx,
        audience,
        key=row.conversation_key,
        run_id=run_id,
        role="user" if by_person else "note",
        text=row.text,
        payload={
            "input_id": row.id,
            "idempotency_key": row.idempotency_key,
            "principal": row.principal,
            "steer": row.steer,
            **({} if by_person else {"source": row.source}),
            **({"images": list(row.images)} if row.images else {}),
            **({"reply_to": row.reply_to, "quote": quote} if quote is not None else {}),
            **({"forwarded": list(row.forwarded)} if row.forwarded else {}),
        },
        mode=DetailMode.TRANSPARENT,
    )
    tx.execute(_DELIVERED, input_id=row.id, message_id=message.id, run_id=run_id)
    return message


def deliver_post(tx: WriteTx, row: Any, audience: list[str]) -> models.Message:
    """Turn a post input into its assistant message; it belongs to no run."""
    source = sources.from_json(row.source)
    assert isinstance(source, sources.PostSource), f"input {row.id} is not a post"
    message = posts.append(
        tx,
        audience,
        key=row.conversation_key,
        text=row.text,
        posted_by=source.posted_by,
        extra={
            "input_id": row.id,
            "idempotency_key": row.idempotency_key,
            **({"widget": source.widget} if source.widget is not None else {}),
        },
    )
    tx.execute(_POST_DELIVERED, input_id=row.id, message_id=message.id)
    return message
