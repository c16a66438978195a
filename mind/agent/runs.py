"""The runs API group: what a client or an operator asks of a conversation's runs."""

from __future__ import annotations

from mind.agent.actors import ConversationActors
from mind.conversation import queries
from mind.conversation.access import Viewer, check_principal
from mind.events.views import CompactionView


class Runs:
    def __init__(self, actors: ConversationActors) -> None:
        self._actors = actors

    async def cancel(self, viewer: Viewer, key: str) -> str:
        """Cancel the active run (WrongState when none); the id of the run it ended."""
        check_principal(viewer.principal)
        async with self._actors.visible(viewer, key) as actor:
            return await actor.cancel()

    async def compact(self, viewer: Viewer, key: str) -> CompactionView:
        """Requested compaction by a client: NotFound if not visible, WrongState when nothing to
        compact, CompactionFailed when the summarising call failed, ShuttingDown."""
        check_principal(viewer.principal)
        async with self._actors.visible(viewer, key) as actor:
            return await actor.compact()

    async def compact_for_operator(self, key: str) -> CompactionView:
        """The same for `tobe admin` (no visibility check); NotFound for an unknown key.

        `ConversationActors.holding` would make an actor for any key, so the conversation must
        exist first.
        """
        await self._actors.database.read(lambda session: queries.access(session, key))
        async with self._actors.holding(key) as actor:
            return await actor.compact()
