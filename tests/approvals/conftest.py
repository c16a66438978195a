"""Fixtures of the approval tests: a conversation in a real store and calls to review."""

from __future__ import annotations

import pytest
from approval_calls import CONVERSATION, MEMBER, OWNER, MakeCall, make_call
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mind.store.models import Conversation, ConversationMember


@pytest.fixture
def call() -> MakeCall:
    return make_call


@pytest.fixture
async def conversation(sessions: async_sessionmaker[AsyncSession]) -> str:
    async with sessions() as session, session.begin():
        session.add(Conversation(key=CONVERSATION, owner=OWNER, title="approvals"))
        await session.flush()
        session.add(ConversationMember(conversation_key=CONVERSATION, principal=MEMBER))
    return CONVERSATION
