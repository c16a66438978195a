"""A widget type for the tests: `trip` with modules `stops` (objects) and `notes` (strings)."""

from __future__ import annotations

import json
from typing import Any

from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx

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


async def image_in(database: Database, key: str, digest: str) -> None:
    """Store a one-byte PNG `digest`, carried by a person's message of conversation `key`."""

    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Media(digest=digest, media_type="image/png", size_bytes=1, data=b"x"))
        tx.session.add(
            models.Message(
                conversation_key=key,
                role="user",
                text="",
                payload={
                    "images": [{"digest": digest, "media_type": "image/png", "size_bytes": 1}]
                },
            )
        )

    await database.write(unit)
