"""A widget type for the tests: `trip` with modules `stops` (objects) and `notes` (strings)."""

from __future__ import annotations

import json
from typing import Any

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
