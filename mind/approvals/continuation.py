"""A decision no execution was waiting for continues its interrupted call's run.

Which calls are open and where each came from is `mind.conversation.continuation`; this is the
approvals' side: at start every open call that can continue now does, and later each decision
the Broker reports as unattended continues its call (`Resume`, the conversation manager's). A
conversation another Mind sharing the database left running, taken over here after the start
(`adopted`), continues its open calls as a start would.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from mind.approvals.model import ApprovalRecord
from mind.conversation.continuation import interrupted_open_calls
from mind.store.database import Database

log = logging.getLogger(__name__)

# (conversation key, tool call id) -> starts the continuation run (or queues it).
Resume = Callable[[str, str], Awaitable[None]]


class Continuation:
    """Starts continuation runs; see the module docstring."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._resume: Resume | None = None

    async def start(self, resume: Resume) -> None:
        """Continue every open call that can continue now (run after recovery)."""
        self._resume = resume
        calls = await self._database.read(interrupted_open_calls)
        for call in calls:
            if call.ready:
                await self._continue(call.conversation_key, call.tool_call_id)

    async def adopted(self, conversation_key: str) -> None:
        """Continue the open calls of a conversation taken over from another Mind (before
        `start`, nothing: `start` continues them)."""
        if self._resume is None:
            return
        calls = await self._database.read(interrupted_open_calls)
        for call in calls:
            if call.conversation_key == conversation_key and call.ready:
                await self._continue(conversation_key, call.tool_call_id)

    async def on_decision(self, record: ApprovalRecord) -> None:
        """Broker callback for a decision no execution in this process was waiting for."""
        calls = await self._database.read(interrupted_open_calls)
        if any(call.tool_call_id == record.tool_call_id for call in calls):
            await self._continue(record.conversation_key, record.tool_call_id)

    async def _continue(self, conversation_key: str, tool_call_id: str) -> None:
        if self._resume is None:
            return
        log.info("continuing the interrupted call %s", tool_call_id)
        await self._resume(conversation_key, tool_call_id)
