"""Fixtures for widgets: a store with a conversation and a registered trip type."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.widgets.types import put_type

KEY = "p_trip"
PAGE = b"<!doctype html><title>Trip</title><main id=trip></main>"


def document(**modules: dict[str, Any]) -> str:
    return json.dumps({"modules": modules})


STOP = {
    "description": "One stop of the trip, in visiting order.",
    "schema": {
        "type": "object",
        "properties": {"place": {"type": "string"}, "nights": {"type": "integer", "minimum": 0}},
        "required": ["place"],
        "additionalProperties": False,
    },
}
NOTE = {"description": "A note about the trip.", "schema": {"type": "string", "maxLength": 200}}
TRIP = document(stops=STOP, notes=NOTE)


@pytest.fixture
async def trip_store(database: Database) -> Database:
    """A conversation `p_trip` (owner alice) and widget type `trip` (stops, notes)."""

    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))
        tx.session.flush()
        put_type(tx, "trip", TRIP, PAGE, force=False)

    await database.write(unit)
    return database
