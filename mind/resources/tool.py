"""`read_resource`: the model reads one document listed in the resources catalog."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mind.resources.catalog import READ_RESOURCE, ResourceCatalog, ResourceRefused
from mind.tools.base import Effect, ToolContext, ToolOutcome


class ReadResourceTool:
    name = READ_RESOURCE
    description = (
        "Read one document from the resources catalog in the system prompt, by its path "
        "exactly as listed."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "the path as listed"}
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    effect = Effect.READ_ONLY
    hand_id = ""

    def __init__(self, catalog: Callable[[], ResourceCatalog]) -> None:
        self._catalog = catalog

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return f"read the resource {arguments['path']!r}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            return ToolOutcome(ok=True, output=self._catalog().read(arguments["path"]))
        except ResourceRefused as exc:
            return ToolOutcome(ok=False, error=str(exc))
