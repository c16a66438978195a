"""The images API group: an image's bytes, for the people who may read a conversation carrying
it (a client shows its messages' pictures; events and history carry only references)."""

from __future__ import annotations

import re

from sqlalchemy.orm import Session

from mind.conversation import queries
from mind.conversation.access import Viewer, check_principal
from mind.conversation.media import image_of
from mind.errors import InvalidInput, NotFound
from mind.store.database import Database

DIGEST = re.compile(r"[0-9a-f]{64}")


class ConversationImages:
    def __init__(self, database: Database) -> None:
        self._database = database

    async def read(self, viewer: Viewer, key: str, digest: str) -> tuple[str, bytes]:
        """(media type, bytes); NotFound when the viewer cannot see the conversation or no
        message of it carries the image (the two are not told apart)."""
        check_principal(viewer.principal)
        if not DIGEST.fullmatch(digest):
            raise InvalidInput(
                f"digest {digest[:80]!r} is not a SHA-256 in lowercase hex (an ImageRef.digest)"
            )

        def read(session: Session) -> tuple[str, bytes] | None:
            queries.visible(session, viewer, key)
            return image_of(session, key, digest)

        found = await self._database.read(read)
        if found is None:
            raise NotFound(f"no image {digest} in conversation {key!r}")
        return found
