"""Payloads of durable events and of read views, as plain dicts.

One rendering serves the outbox (rendered in the mode frozen at admission) and the snapshot
and history reads (rendered in the viewer's mode, never more detailed than the admission).

Format, shared with every writer of the outbox: keys are the field names of the matching
`tobe.v1` message (`Message`, `Run`, `ToolProjection`, `QueuedMessage`, `Conversation`,
`Approval`, `CredentialRevoked`); enum values are the store's lowercase words ("running",
"transparent", "tool"); timestamps are ISO-8601 strings in UTC. Event `type` is the name of
the `Event.payload` field: message_appended, run_changed, tool_changed, approval_changed,
conversation_created, credential_revoked, message_queued.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mind.store import models

SUMMARY, TRANSPARENT = "summary", "transparent"


def iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else ""


def shown_mode(admitted: str, viewer: str) -> str:
    """The mode to render in: the viewer's, but never more detailed than the admission."""
    return TRANSPARENT if admitted == TRANSPARENT and viewer == TRANSPARENT else SUMMARY


def message_view(row: models.Message, viewer: str) -> dict[str, Any]:
    payload = row.payload or {}
    admitted = payload.get("detail_mode", "")
    view: dict[str, Any] = {
        "id": row.id,
        "conversation_key": row.conversation_key,
        "role": row.role,
        "text": row.text,
        "run_id": row.run_id or "",
        "created_at": iso(row.created_at),
        "admitted_mode": admitted,
    }
    transparent = bool(admitted) and shown_mode(admitted, viewer) == TRANSPARENT
    if row.role == "assistant":
        view["tool_calls"] = [
            {"id": call["id"], "name": call["name"]} for call in payload.get("tool_calls", [])
        ]
        if transparent:
            view["thinking"] = "\n\n".join(
                block.get("text", "") for block in payload.get("thinking", [])
            )
    elif row.role == "tool" or (row.role == "note" and "result_summary" in payload):
        # A note carrying a background task's result is shown like that task's tool result.
        view["tool_call_id"] = payload.get("tool_call_id", "")
        view["result_summary"] = payload.get("result_summary", "")
        view["is_error"] = bool(payload.get("is_error"))
        if not transparent:
            view["text"] = view["result_summary"]
    elif row.role == "user":
        view["idempotency_key"] = payload.get("idempotency_key", "")
    return view


def projection_view(row: models.ToolProjection, viewer: str) -> dict[str, Any]:
    shown = shown_mode(row.admitted_mode, viewer)
    view: dict[str, Any] = {
        "tool_call_id": row.tool_call_id,
        "conversation_key": row.conversation_key,
        "run_id": row.run_id,
        "tool": row.tool,
        "admitted_mode": row.admitted_mode,
        "shown_mode": shown,
        "arguments_summary": row.arguments_summary,
        "status": row.status,
        "result_summary": row.result_summary,
        "admitted_at": iso(row.admitted_at),
        "finished_at": iso(row.finished_at),
        "hand_id": row.hand_id,
        "projection_version": row.projection_version,
    }
    if shown == TRANSPARENT:
        view["arguments_json"] = (row.arguments_projection or {}).get("arguments_json", "")
        view["result_text"] = (row.result_projection or {}).get("text", "")
    return view


def run_view(row: models.Run) -> dict[str, Any]:
    return {
        "id": row.id,
        "conversation_key": row.conversation_key,
        "state": row.state,
        "reason": row.reason,
        "admitted_mode": row.detail_mode,
        "started_at": iso(row.started_at),
        "finished_at": iso(row.finished_at),
        "trigger": row.trigger,
    }


def queued_view(row: models.Input, run_id: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "steer": row.steer,
        "text": row.text,
        "idempotency_key": row.idempotency_key,
        "input_id": row.id,
    }


def conversation_view(
    row: models.Conversation, members: list[str], last_event_id: int = 0
) -> dict[str, Any]:
    return {
        "key": row.key,
        "title": row.title,
        "owner": row.owner,
        "members": members,
        "created_at": iso(row.created_at),
        "last_event_id": last_event_id,
    }
