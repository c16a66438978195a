"""Fixtures for widgets: a store with a conversation and a registered trip type."""

from __future__ import annotations

import pytest
from trip_type import KEY, PAGE, TRIP

from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.widgets.types import put_type


@pytest.fixture
async def trip_store(database: Database) -> Database:
    """A conversation `p_trip` (owner alice) and widget type `trip` (stops, notes)."""

    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))
        tx.session.flush()
        put_type(tx, "trip", TRIP, PAGE, force=False)

    await database.write(unit)
    return database
