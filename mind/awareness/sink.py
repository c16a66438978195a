"""Delivers observation notes, with their images (`mind.awareness.images`), into conversations
through the conversation manager (`mind.agent`, a floor above: the sink names only the calls it
makes, `Conversations`).

A note for a source's own conversation (`ObservationNote.title` set) creates it for the owner
when it does not exist: on its first note, or again after someone deleted it. Creating is
idempotent (a key taken meanwhile, by another delivery or before a restart, is `AlreadyExists`),
so nothing needs remembering across restarts. Both are created with kind "awareness", so a
person's `tobe chat` never opens them first. A note for a conversation the config names that
does not exist goes to the default one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from mind.awareness.images import NoteImages
from mind.awareness.notes import ObservationNote
from mind.cluster.errors import OwnedElsewhere
from mind.conversation import kinds
from mind.conversation.access import Viewer
from mind.conversation.images import CheckedImage
from mind.conversation.sources import ObservationSource
from mind.errors import AlreadyExists, NotFound
from mind.store import models
from mind.store.database import Database

log = logging.getLogger(__name__)


class _Creating(Protocol):
    async def create(
        self, viewer: Viewer, key: str, title: str, members: list[str], *, kind: str
    ) -> Any: ...


class _Delivering(Protocol):
    async def deliver_observation(
        self,
        key: str,
        text: str,
        idempotency_key: str,
        steer: bool,
        source: ObservationSource,
        *,
        images: Sequence[CheckedImage],
    ) -> Any: ...


class Conversations(Protocol):
    """What the sink needs of the conversation manager."""

    @property
    def conversations(self) -> _Creating: ...
    @property
    def messages(self) -> _Delivering: ...
    @property
    def database(self) -> Database: ...


class ConversationSink:
    def __init__(
        self, manager: Conversations, images: NoteImages, *, default_key: str, owner: str
    ) -> None:
        self._manager = manager
        self._images = images
        self._default = default_key
        self._owner = owner

    async def ensure_default(self) -> None:
        """Create the owner's default observation conversation if it does not exist. Beside
        other Minds on one store it usually does already; when another Mind is creating it
        meanwhile, that Mind holds its lease (`OwnedElsewhere`) and makes it."""
        if await self._exists(self._default):
            return
        try:
            await self._manager.conversations.create(
                Viewer(self._owner), self._default, "Awareness", [], kind=kinds.AWARENESS
            )
            log.info("created the awareness conversation %s for %s", self._default, self._owner)
        except (AlreadyExists, OwnedElsewhere):
            pass

    async def deliver(self, note: ObservationNote) -> str:
        key = note.conversation_key
        if not await self._exists(key):
            key = await self._instead_of_missing(note)
        source = ObservationSource(
            trust=note.trust,
            permissions=dict(note.permissions),
            adapters=tuple(note.sources),
            instances=tuple(note.instances),
            source_titles=tuple(note.source_titles),
            observation_ids=tuple(note.observation_ids),
            publish_seq=note.publish_seq,
        )
        images = await self._images.fetch(note.media)
        await self._manager.messages.deliver_observation(
            key, note.text, note.idempotency_key, note.steer, source, images=images
        )
        return key

    async def _instead_of_missing(self, note: ObservationNote) -> str:
        """Where a note whose conversation does not exist goes: a source's conversation is
        created; a configured one that is missing is replaced by the default."""
        key = note.conversation_key
        if note.title:
            return await self._create_for_source(key, note.title)
        if key != self._default:
            log.warning(
                "observations from %s name conversation %s, which does not exist; "
                "delivering them to %s",
                ", ".join(note.sources),
                key,
                self._default,
            )
        # Missing too when a Mind sharing the store took its lease to create it and died.
        await self.ensure_default()
        return self._default

    async def _create_for_source(self, key: str, title: str) -> str:
        """Create a source's conversation for the owner; its key, or the default's when the
        key belongs to someone else (the owner changed since it was created)."""
        try:
            await self._manager.conversations.create(
                Viewer(self._owner), key, title, [], kind=kinds.AWARENESS
            )
            log.info("created the conversation %s (%s) for %s", key, title, self._owner)
        except AlreadyExists:
            pass
        except NotFound:
            log.warning(
                "the conversation %s of %s is not %s's; delivering to %s",
                key,
                title,
                self._owner,
                self._default,
            )
            return self._default
        return key

    async def _exists(self, key: str) -> bool:
        return await self._manager.database.read(
            lambda session: session.get(models.Conversation, key) is not None
        )
