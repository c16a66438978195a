"""Quotes and forwarded chat records: what a person's message may carry besides its text.

A message may quote (reply to) another message a person or the assistant wrote in the same
conversation; a quote of a message elsewhere, of none, or of a tool result or a runtime note
(whose raw text a summary view must not show), is refused before anything is stored. What
the quote shows (who said the quoted message, its text cut short, whether it has images) is
taken when the message is delivered and kept in its payload, so the quoting message reads the
same after the quoted one scrolls out of the model's context.

A forwarded chat record is a list of items (speaker, text, images) a client sends with the
message; its images are checked and stored like the message's own and count towards the same
limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, or_, select
from sqlalchemy.orm import Session

from mind.conversation.images import CheckedImage, ImageUpload, check_images
from mind.conversation.limits import check_text
from mind.errors import InvalidInput
from mind.store import models
from mind.store.write_tx import WriteTx

MAX_FORWARDED_ITEMS = 50
MAX_SPEAKER = 64
QUOTE_CHARS = 200
ASSISTANT = "assistant"
QUOTABLE_ROLES = ("user", "assistant")

_QUOTED = select(
    models.Message.id, models.Message.role, models.Message.text, models.Message.payload
).where(
    models.Message.conversation_key == bindparam("key"),
    models.Message.id == bindparam("message_id"),
    # No IN: the write units' prepared statements take no list parameter.
    or_(*(models.Message.role == role for role in QUOTABLE_ROLES)),
)


@dataclass(frozen=True)
class ForwardUpload:
    """One item of a forwarded chat record, as a client sent it."""

    speaker: str
    text: str
    images: Sequence[ImageUpload] = ()


@dataclass(frozen=True)
class CheckedForward:
    speaker: str
    text: str
    images: tuple[CheckedImage, ...] = ()

    def ref(self) -> dict[str, Any]:
        """What a payload keeps of it (image references, never bytes)."""
        return {
            "speaker": self.speaker,
            "text": self.text,
            "images": [image.ref() for image in self.images],
        }


def cut(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text` on one line, at most `limit` characters, a cut marked with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _quote(row: Any) -> dict[str, Any]:
    payload = row.payload or {}
    speaker = (payload.get("principal") or "user") if row.role == "user" else ASSISTANT
    return {
        "message_id": row.id,
        "speaker": speaker,
        "text": cut(row.text),
        "has_images": bool(payload.get("images")),
    }


def check_reply_to(session: Session, key: str, message_id: int) -> None:
    """InvalidInput unless `message_id` (when not 0) is a message of conversation `key`."""
    if message_id == 0:
        return
    if (
        message_id < 0
        or session.execute(_QUOTED, {"key": key, "message_id": message_id}).first() is None
    ):
        raise InvalidInput(
            f"reply_to {message_id} is not a message of this conversation: quote a message "
            "you or the assistant wrote in it, or send without reply_to"
        )


def quote_at_delivery(tx: WriteTx, key: str, message_id: int | None) -> dict[str, Any] | None:
    """The quote a message delivered now shows (None when it quotes nothing)."""
    if not message_id:
        return None
    row = tx.first(_QUOTED, key=key, message_id=message_id)
    return None if row is None else _quote(row)


def check_forwarded(
    items: Sequence[ForwardUpload],
    *,
    max_text_bytes: int,
    max_image_bytes: int,
    max_images: int,
) -> list[CheckedForward]:
    """The items, checked: at most `MAX_FORWARDED_ITEMS`, each with a one-line speaker and
    some text or an image, and at most `max_images` images among them all."""
    if len(items) > MAX_FORWARDED_ITEMS:
        raise InvalidInput(
            f"the forwarded record has {len(items)} items; the maximum is {MAX_FORWARDED_ITEMS}"
        )
    total = sum(len(item.images) for item in items)
    if total > max_images:
        raise InvalidInput(
            f"the forwarded record carries {total} images; the maximum is {max_images} "
            "(setting mind.max_images)"
        )
    checked = []
    for index, item in enumerate(items):
        speaker = item.speaker.strip()
        if not speaker or len(speaker) > MAX_SPEAKER or "\n" in speaker:
            raise InvalidInput(
                f"forwarded item {index}: speaker must be 1 to {MAX_SPEAKER} characters on one line"
            )
        try:
            check_text(item.text, "forward", max_text_bytes, images=len(item.images))
            images = check_images(
                item.images,
                max_bytes=max_image_bytes,
                max_count=max_images,
                carrier=f"forwarded item {index}",
            )
        except InvalidInput as error:
            raise InvalidInput(f"forwarded item {index}: {error}") from error
        checked.append(CheckedForward(speaker, item.text, tuple(images)))
    return checked
