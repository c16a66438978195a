"""Stored message rows ↔ the agent core's history types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mind.conversation.history import ForwardedEntry, HistoryMessage, QuotedMessage
from mind.conversation.media import image_refs
from mind.providers.base import ImagePart, ProviderResult, ThinkingBlock, ToolCall
from mind.store import models


def _thinking(block: dict[str, Any]) -> ThinkingBlock:
    return ThinkingBlock(
        text=block.get("text", ""),
        signature=block.get("signature"),
        redacted_data=block.get("redacted_data"),
    )


def _call(data: dict[str, Any]) -> ToolCall:
    return ToolCall(
        id=data["id"],
        name=data["name"],
        arguments=data.get("arguments"),
        raw_arguments=data.get("raw_arguments", ""),
        argument_error=data.get("argument_error"),
        thought_signature=data.get("thought_signature"),
        # Absent in messages stored before the model's own id was kept.
        provider_id=data.get("provider_id") or "",
    )


def history_message(
    row: models.Message, images: Mapping[str, ImagePart] | None = None
) -> HistoryMessage:
    """The message of `row`; its images are taken from `images` (by digest, read with
    `mind.conversation.media.read_images`), and one missing there is unreadable."""
    payload = row.payload or {}
    digests = [ref["digest"] for ref in image_refs(payload)]
    found = images or {}
    quote = payload.get("quote")
    return HistoryMessage(
        id=row.id,
        role=row.role,  # type: ignore[arg-type]
        text=row.text,
        created_at=row.created_at,
        images=tuple(found[digest] for digest in digests if digest in found),
        unreadable_images=sum(1 for digest in digests if digest not in found),
        thinking=tuple(_thinking(b) for b in payload.get("thinking", [])),
        tool_calls=tuple(_call(c) for c in payload.get("tool_calls", [])),
        tool_call_id=payload.get("tool_call_id", ""),
        tool_name=payload.get("tool_name", ""),
        is_error=bool(payload.get("is_error")),
        run_id=row.run_id or "",
        posted_by=payload.get("posted_by", "") if row.role == "assistant" else "",
        quote=QuotedMessage(**quote) if quote else None,
        forwarded=tuple(_forwarded(item, found) for item in payload.get("forwarded", [])),
    )


def _forwarded(item: Mapping[str, Any], images: Mapping[str, ImagePart]) -> ForwardedEntry:
    digests = [ref["digest"] for ref in item.get("images", [])]
    return ForwardedEntry(
        speaker=item["speaker"],
        text=item["text"],
        images=tuple(images[digest] for digest in digests if digest in images),
        unreadable_images=sum(1 for digest in digests if digest not in images),
    )


def assistant_payload(
    result: ProviderResult, calls: list[ToolCall], mode: str, step: int
) -> dict[str, Any]:
    """Everything needed to send the message back to a provider byte for byte."""
    return {
        "detail_mode": mode,
        "step": step,
        "model": result.model,
        "stop_reason": result.stop_reason.value,
        "usage": {
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
            "cached_tokens": result.usage.cached_tokens,
        },
        "thinking": [
            {"text": b.text, "signature": b.signature, "redacted_data": b.redacted_data}
            for b in result.thinking
        ],
        "tool_calls": [
            {
                "id": c.id,
                "name": c.name,
                "arguments": c.arguments,
                "raw_arguments": c.raw_arguments,
                "argument_error": c.argument_error,
                "thought_signature": c.thought_signature,
                "provider_id": c.provider_id,
            }
            for c in calls
        ],
    }
