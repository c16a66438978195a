"""Fixtures for memory: a store with a conversation (owner alice, member bob) and its tools."""

from __future__ import annotations

import pytest

from mind.memory.store import Memory
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx

KEY = "g_team"


@pytest.fixture
async def memory(database: Database) -> Memory:
    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))
        tx.session.flush()
        tx.session.add(models.ConversationMember(conversation_key=KEY, principal="bob"))

    await database.write(unit)
    return Memory(database)
