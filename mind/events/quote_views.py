"""Views of what a person's message carries besides its text: a quote, a forwarded record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mind.events.image_views import ImageRefView

Payload = dict[str, Any]


@dataclass(frozen=True)
class QuoteView:
    """What a quoting message shows of the message it quotes, as it was when quoted."""

    message_id: int
    speaker: str
    text: str
    has_images: bool

    def to_payload(self) -> Payload:
        return {
            "message_id": self.message_id,
            "speaker": self.speaker,
            "text": self.text,
            "has_images": self.has_images,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> QuoteView:
        return cls(
            payload["message_id"], payload["speaker"], payload["text"], payload["has_images"]
        )


@dataclass(frozen=True)
class ForwardedItemView:
    """One message of a forwarded chat record."""

    speaker: str
    text: str
    images: tuple[ImageRefView, ...] = ()

    def to_payload(self) -> Payload:
        return {
            "speaker": self.speaker,
            "text": self.text,
            "images": [image.to_payload() for image in self.images],
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> ForwardedItemView:
        return cls(
            payload["speaker"],
            payload["text"],
            tuple(ImageRefView.from_payload(ref) for ref in payload.get("images", [])),
        )
