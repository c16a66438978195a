"""The card of a widget message, as events and history carry it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Payload = dict[str, Any]


@dataclass(frozen=True)
class WidgetCardView:
    """The card of a widget message: what a client shows before opening the type's page."""

    id: str
    type: str
    title: str
    summary: str
    cover: str
    revision: int

    def to_payload(self) -> Payload:
        return {
            "id": self.id,
            "type": self.type,
            "title": self.title,
            "summary": self.summary,
            "cover": self.cover,
            "revision": self.revision,
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> WidgetCardView:
        return cls(
            id=payload["id"],
            type=payload["type"],
            title=payload["title"],
            summary=payload["summary"],
            cover=payload["cover"],
            revision=payload["revision"],
        )
