"""The memory API group: a conversation's memory as its people see and prune it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from mind.conversation import queries
from mind.conversation.access import Viewer, check_principal
from mind.errors import NotAllowed
from mind.memory.store import Memory, MemoryListing, listing
from mind.store.database import Database


class ConversationMemory:
    def __init__(self, database: Database) -> None:
        self._database = database
        self._memory = Memory(database)

    async def list(self, viewer: Viewer, key: str) -> MemoryListing:
        """A conversation's memory, for its owner and members (NotFound for anyone else)."""
        check_principal(viewer.principal)

        def read(session: Session) -> MemoryListing:
            queries.visible(session, viewer, key)
            return listing(session, key)

        return await self._database.read(read)

    async def delete(self, viewer: Viewer, key: str, memory_key: str) -> bool:
        """Delete one memory entry as the conversation's owner; whether it existed.

        Members see the memory but may not delete from it (NotAllowed): it is the owner's.
        """
        check_principal(viewer.principal)
        owner = await self._database.read(
            lambda session: queries.visible(session, viewer, key)[0].owner
        )
        if viewer.principal != owner:
            raise NotAllowed(f"only the owner of {key} may delete from its memory")
        return await self._memory.delete(key, memory_key, run_id="")
