"""Grants to "approve for this conversation": persisted in `approval_grants`, cached in memory.

A grant covers later calls of the same name on the same Hand in the same conversation (any
arguments): a tool's name, or an adapter action's (`email@work.send`, so it covers only that
action of that instance). It never covers what the policy denies, e.g. any change in a run
triggered by a low-trust source (the policy runs first), nor any call of a run an observation
below high trust triggered (`mind.approvals.policy.grants_apply`).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.approvals.model import ApprovalRecord
from mind.store.database import Database
from mind.store.models import ApprovalGrant
from mind.tools.authorizer import Decision


class GrantCache:
    """Per-conversation cache of grants, loaded on first use and updated by the broker."""

    def __init__(self, database: Database) -> None:
        self._database = database
        # conversation key -> {(tool, hand_id): approval id}, as loaded from the store …
        self._loaded: dict[str, dict[tuple[str, str], str]] = {}
        # … and as granted by decisions in this process (kept apart so a load that raced
        # with a decision cannot lose it).
        self._added: dict[str, dict[tuple[str, str], str]] = {}

    async def find(self, conversation_key: str, tool: str, hand_id: str) -> str | None:
        """The id of the approval that granted (tool, Hand) in the conversation, if any."""
        added = self._added.get(conversation_key, {}).get((tool, hand_id))
        if added is not None:
            return added
        grants = self._loaded.get(conversation_key)
        if grants is None:
            grants = await self._load(conversation_key)
        return grants.get((tool, hand_id))

    async def _load(self, conversation_key: str) -> dict[tuple[str, str], str]:
        def query(session: Session) -> dict[tuple[str, str], str]:
            rows = session.scalars(
                select(ApprovalGrant).where(ApprovalGrant.conversation_key == conversation_key)
            )
            return {(row.tool, row.hand_id): row.approval_id for row in rows}

        grants = await self._database.read(query)
        self._loaded[conversation_key] = grants
        return grants

    async def on_decision(self, record: ApprovalRecord) -> None:
        """Broker listener: remember a committed "approve for this conversation"."""
        if record.decision is Decision.APPROVE_CONVERSATION:
            grants = self._added.setdefault(record.conversation_key, {})
            grants.setdefault((record.tool, record.hand_id), record.id)

    def forget(self, conversation_key: str) -> None:
        """Drop a conversation's cached grants (it was deleted or its Actor was unloaded)."""
        self._loaded.pop(conversation_key, None)
        self._added.pop(conversation_key, None)
