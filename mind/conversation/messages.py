"""Appending to a transcript: the message row and its `message_appended` event, together."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mind.events.payloads import message_view
from mind.sealing.forms import Sealer
from mind.store import models
from mind.store.write_tx import WriteTx
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
    sealer: Sealer | None = None,
) -> models.Message:
    """Append a message (messages are append-only) and announce it to `audience`, rendered
    for the detail mode it was admitted under.

    With a `sealer` (a sealed run's), what may carry raw values is stored sealed
    (`mind.sealing.forms`); the message returned is the plain one."""
    stored_text, stored_payload = text, payload
    if sealer is not None and role == "assistant":
        stored_payload = sealer.assistant(payload)
    elif sealer is not None and role == "tool":
        stored_text, stored_payload = sealer.tool_result(text, payload)
    message = tx.insert(
        models.Message(
            conversation_key=key,
            run_id=run_id,
            role=role,
            text=stored_text,
            payload=stored_payload,
            created_at=at or datetime.now(UTC),
        )
    )
    view = message_view(message, mode).to_payload()
    if sealer is not None and stored_payload is not payload:
        message = models.Message(
            id=message.id,
            conversation_key=key,
            run_id=run_id,
            role=role,
            text=text,
            payload=payload,
            created_at=message.created_at,
        )
        view = sealer.event(view, message_view(message, mode).to_payload())
    tx.event("message_appended", key, audience, view)
    return message
