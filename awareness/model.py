"""The generic observation envelope and the permissions the engine attaches from trust.

The engine knows nothing else about an environment: rooms, messages and devices live in the
adapter-owned `content`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class Trust(StrEnum):
    """How involved a source is; never whether its text is true."""

    OFF = "off"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    MAX = "max"


class Effect(StrEnum):
    """What running an action changes (the Mind's effect classes; its approval policy decides)."""

    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"
    EXTERNAL_SIDE_EFFECT = "external_side_effect"
    # The adapter cannot say: judged like the riskiest class.
    UNKNOWN = "unknown"


class AdapterState(StrEnum):
    """Where a registered adapter is in its supervised lifecycle."""

    STARTING = "starting"
    RUNNING = "running"
    # Start, run or a reported failure: stopped, and started again after a backoff delay.
    FAILED = "failed"
    # Not started (auto_start off) or stopped on purpose.
    STOPPED = "stopped"


class Actor(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SERVICE = "service"
    SIGNAL = "signal"
    ADAPTER = "adapter"
    SYSTEM = "system"


@dataclass(frozen=True)
class Permissions:
    """What a run triggered by an observation may do."""

    workspace_write: bool = False
    reply: bool = False
    retrieval_media: bool = False
    generated_media: bool = False
    channel_operations: bool = False

    def as_dict(self) -> dict[str, bool]:
        return {
            "workspace_write": self.workspace_write,
            "reply": self.reply,
            "retrieval_media": self.retrieval_media,
            "generated_media": self.generated_media,
            "channel_operations": self.channel_operations,
        }


_NARROW = Permissions(reply=True, retrieval_media=True)
_PERMISSIONS = {
    Trust.OFF: _NARROW,
    Trust.LOW: _NARROW,
    Trust.MEDIUM: Permissions(
        reply=True, retrieval_media=True, generated_media=True, channel_operations=True
    ),
    Trust.HIGH: Permissions(True, True, True, True, True),
    Trust.MAX: Permissions(True, True, True, True, True),
}


def permissions_for(trust: Trust) -> Permissions:
    """Permissions by trust (low/off: replies and retrieval media only; high/max: everything)."""
    return _PERMISSIONS[trust]


@dataclass(frozen=True)
class MediaRef:
    """A stored media object, named by the sha256 of its bytes."""

    ref: str
    mime_type: str
    size_bytes: int
    width: int = 0
    height: int = 0
    filename: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "mime_type": self.mime_type,
            "size_bytes": self.size_bytes,
            "width": self.width,
            "height": self.height,
            "filename": self.filename,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MediaRef:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class Observation:
    id: str
    adapter_id: str
    adapter_name: str
    actor: Actor
    trust: Trust
    timestamp: datetime
    content: dict[str, Any]
    media: tuple[MediaRef, ...] = ()
    permissions: Permissions = field(default_factory=Permissions)
    # Conversation named by the adapter's config; "" for the owner's default.
    conversation_key: str = ""
    # The configured instance (`email@work`; the adapter's name for its default instance).
    instance: str = ""
    # The source within the instance (a chat, a mailbox), each routed to its own conversation.
    source_key: str = ""
    source_title: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "adapter_id": self.adapter_id,
            "adapter_name": self.adapter_name,
            "actor": self.actor.value,
            "trust": self.trust.value,
            "timestamp": self.timestamp.isoformat(),
            "content": self.content,
            "media": [m.as_dict() for m in self.media],
            "permissions": self.permissions.as_dict(),
            "conversation_key": self.conversation_key,
            "instance": self.instance,
            "source_key": self.source_key,
            "source_title": self.source_title,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Observation:
        return cls(
            id=data["id"],
            adapter_id=data["adapter_id"],
            adapter_name=data["adapter_name"],
            actor=Actor(data["actor"]),
            trust=Trust(data["trust"]),
            timestamp=datetime.fromisoformat(data["timestamp"]),
            content=data["content"],
            media=tuple(MediaRef.from_dict(m) for m in data.get("media", [])),
            permissions=Permissions(**data.get("permissions", {})),
            conversation_key=data.get("conversation_key", ""),
            instance=data.get("instance", data["adapter_name"]),
            source_key=data.get("source_key", ""),
            source_title=data.get("source_title", ""),
        )


@dataclass(frozen=True)
class PublishedBatch:
    """Observations published together under one strictly increasing sequence number."""

    publish_seq: int
    observations: tuple[Observation, ...]


@dataclass(frozen=True)
class CallResult:
    """Result of a tool call as the agent sees it: `content` is JSON with a `status`."""

    call_id: str
    adapter_id: str
    action: str
    timestamp: datetime
    content: dict[str, Any]
