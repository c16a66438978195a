"""The usage API group: what a conversation's model requests took, for the people in it."""

from __future__ import annotations

from mind.conversation import queries
from mind.conversation.access import Viewer, check_principal
from mind.store.database import Database
from mind.usage.reports import Grouping, UsageReport, UsageReports


class ConversationUsage:
    def __init__(self, database: Database, reports: UsageReports) -> None:
        self._database = database
        self._reports = reports

    async def of(self, viewer: Viewer, key: str) -> UsageReport:
        """The conversation's usage by purpose, for its owner and members (NotFound for anyone
        else, and for a deleted conversation, whose rows stay for the operator's reports)."""
        check_principal(viewer.principal)
        await self._database.read(lambda session: queries.visible(session, viewer, key))
        return await self._reports.report(Grouping.PURPOSE, conversation_key=key)
