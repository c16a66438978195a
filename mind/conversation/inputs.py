"""The inputs queue: user messages accepted by SendChat, delivered to runs in order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.events.payloads import message_view, queued_view
from mind.store import models
from mind.store.database import WriteTx


def find(session: Session, key: str, idempotency_key: str) -> models.Input | None:
    return session.scalar(
        select(models.Input).where(
            models.Input.conversation_key == key,
            models.Input.idempotency_key == idempotency_key,
        )
    )


def oldest_queued(session: Session, key: str) -> models.Input | None:
    return session.scalar(
        select(models.Input)
        .where(models.Input.conversation_key == key, models.Input.state == "queued")
        .order_by(models.Input.id)
        .limit(1)
    )


def queued(session: Session, key: str, *, steer_only: bool = False) -> list[models.Input]:
    query = select(models.Input).where(
        models.Input.conversation_key == key, models.Input.state == "queued"
    )
    if steer_only:
        query = query.where(models.Input.steer.is_(True))
    return list(session.scalars(query.order_by(models.Input.id)))


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
    source: dict[str, Any] | None = None,
) -> models.Input:
    """Store a new input, queued (no event: the caller delivers it or announces it)."""
    row = models.Input(
        conversation_key=key,
        idempotency_key=idempotency_key,
        principal=principal,
        text=text,
        steer=steer,
        detail_mode=mode,
        source=source or {},
        state="queued",
        created_at=datetime.now(UTC),
    )
    tx.session.add(row)
    tx.session.flush()
    return row


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
    source: dict[str, Any] | None = None,
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
    )
    tx.event("message_queued", key, audience, queued_view(row, active_run_id))
    return row


def deliver(tx: WriteTx, row: models.Input, run_id: str, audience: list[str]) -> models.Message:
    """Turn a queued input into the message of `run_id` (history order = delivery order).

    A person's input becomes a user message; an input with a `source` (an observation)
    becomes a runtime note, which the model sees as platform data, not as the user speaking.
    """
    message = models.Message(
        conversation_key=row.conversation_key,
        run_id=run_id,
        role="note" if row.source else "user",
        text=row.text,
        payload={
            "input_id": row.id,
            "idempotency_key": row.idempotency_key,
            "principal": row.principal,
            "steer": row.steer,
            **({"source": row.source} if row.source else {}),
        },
        created_at=datetime.now(UTC),
    )
    tx.session.add(message)
    tx.session.flush()
    row.state, row.message_id, row.run_id = "delivered", message.id, run_id
    tx.event(
        "message_appended", row.conversation_key, audience, message_view(message, "transparent")
    )
    return message
