"""Delivers observation notes, with their images (`mind.awareness.images`), into conversations
through the conversation manager."""

from __future__ import annotations

import logging

from mind.awareness.images import NoteImages
from mind.awareness.notes import ObservationNote
from mind.conversation.access import Viewer
from mind.conversation.errors import AlreadyExists
from mind.conversation.manager import ConversationManager
from mind.store import models

log = logging.getLogger(__name__)


class ConversationSink:
    def __init__(
        self, manager: ConversationManager, images: NoteImages, *, default_key: str, owner: str
    ) -> None:
        self._manager = manager
        self._images = images
        self._default = default_key
        self._owner = owner

    async def ensure_default(self) -> None:
        """Create the owner's default observation conversation if it does not exist."""
        try:
            await self._manager.create(Viewer(self._owner), self._default, "Awareness", [])
            log.info("created the awareness conversation %s for %s", self._default, self._owner)
        except AlreadyExists:
            pass

    async def deliver(self, note: ObservationNote) -> str:
        key = note.conversation_key
        if not await self._exists(key):
            log.warning(
                "observations from %s name conversation %s, which does not exist; "
                "delivering them to %s",
                ", ".join(note.sources),
                key,
                self._default,
            )
            key = self._default
        source = {
            "kind": "observation",
            "trust": note.trust,
            "permissions": note.permissions,
            "adapters": list(note.sources),
            "observation_ids": list(note.observation_ids),
            "publish_seq": note.publish_seq,
        }
        images = await self._images.fetch(note.media)
        await self._manager.deliver_observation(
            key, note.text, note.idempotency_key, note.steer, source, images=images
        )
        return key

    async def _exists(self, key: str) -> bool:
        return await self._manager.database.read(
            lambda session: session.get(models.Conversation, key) is not None
        )
