"""The view of an image a message carries (shared by messages, forwarded records, results)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Payload = dict[str, Any]


@dataclass(frozen=True)
class ImageRefView:
    """An image a message carries, stored once by the SHA-256 of its bytes."""

    digest: str
    media_type: str
    size_bytes: int

    def to_payload(self) -> Payload:
        return {"digest": self.digest, "media_type": self.media_type, "size_bytes": self.size_bytes}

    @classmethod
    def from_payload(cls, payload: Payload) -> ImageRefView:
        return cls(payload["digest"], payload["media_type"], payload["size_bytes"])
