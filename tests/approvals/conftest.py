"""Fixtures of the approval tests: a conversation in a real store and calls to review."""

from __future__ import annotations

import pytest
from approval_calls import CONVERSATION, MEMBER, OWNER, MakeCall, make_call

from mind.store.database import Database
from mind.store.models import Conversation, ConversationMember
from mind.store.write_tx import WriteTx


@pytest.fixture
def call() -> MakeCall:
    return make_call


@pytest.fixture
async def conversation(database: Database) -> str:
    def unit(tx: WriteTx) -> None:
        tx.session.add(Conversation(key=CONVERSATION, owner=OWNER, title="approvals"))
        tx.session.flush()
        tx.session.add(ConversationMember(conversation_key=CONVERSATION, principal=MEMBER))

    await database.write(unit)
    return CONVERSATION
