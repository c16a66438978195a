"""The card of a widget message, as events and history carry it, and the `widget_changed`
event."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
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


@dataclass(frozen=True)
class WidgetChangedView:
    """A widget's records, title or presentation changed; clients read it again."""

    widget_id: str
    revision: int
    updated_at: datetime

    def to_payload(self) -> Payload:
        return {
            "widget_id": self.widget_id,
            "revision": self.revision,
            "updated_at": self.updated_at.isoformat(),
        }

    @classmethod
    def from_payload(cls, payload: Payload) -> WidgetChangedView:
        return cls(
            payload["widget_id"],
            payload["revision"],
            datetime.fromisoformat(payload["updated_at"]),
        )
