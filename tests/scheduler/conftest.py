"""Fixtures for the scheduler: a store with a conversation (owner alice, member bob) and one of
carol's."""

from __future__ import annotations

import pytest
from scheduling import CAROLS, KEY

from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx


@pytest.fixture
async def conversations(database: Database) -> Database:
    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))
        tx.session.add(models.Conversation(key=CAROLS, owner="carol"))
        tx.session.flush()
        tx.session.add(models.ConversationMember(conversation_key=KEY, principal="bob"))

    await database.write(unit)
    return database
