"""Appending to a transcript: the message row and its `message_appended` event, together."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mind.events.payloads import message_view
from mind.store import models
from mind.store.database import WriteTx
from mind.tools.base import DetailMode


def append_message(
    tx: WriteTx,
    audience: list[str],
    *,
    key: str,
    run_id: str | None,
    role: str,
    text: str,
    payload: dict[str, Any],
    mode: DetailMode,
    at: datetime | None = None,
) -> models.Message:
    """Append a message (messages are append-only) and announce it to `audience`, rendered
    for the detail mode it was admitted under."""
    message = tx.insert(
        models.Message(
            conversation_key=key,
            run_id=run_id,
            role=role,
            text=text,
            payload=payload,
            created_at=at or datetime.now(UTC),
        )
    )
    tx.event("message_appended", key, audience, message_view(message, mode).to_payload())
    return message
