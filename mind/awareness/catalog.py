"""The adapters Awareness runs, as the decision layer's Evaluator is told of them.

An observation condition names an adapter ("tell me when the build fails" watches the CI
webhook), so the Evaluator must know which adapters exist and what they observe. The list is
asked of Awareness (`list_adapters`, the same engine action the `awareness_observe` tool
runs) only when a tendency is evaluated, and kept for a minute: adapters come and go rarely.
"""

from __future__ import annotations

import json
import logging
import time
import uuid

from mind.awareness.client import AwarenessClient
from mind.awareness.errors import AwarenessLinkError

log = logging.getLogger(__name__)

KEEP_SECONDS = 60.0


class AdapterCatalog:
    def __init__(self, client: AwarenessClient, keep_seconds: float = KEEP_SECONDS) -> None:
        self._client = client
        self._keep = keep_seconds
        self._text = ""
        self._read_at = float("-inf")

    async def text(self) -> str:
        """One line per adapter (`- name: description`), or "" when Awareness runs none or
        cannot be reached now (the Evaluator then names no adapter it was not told of)."""
        if time.monotonic() - self._read_at < self._keep:
            return self._text
        try:
            result = await self._client.observe(
                f"decision_{uuid.uuid4().hex}", "", "list_adapters", {}
            )
            adapters = json.loads(result.content_json)["adapters"]
        except (AwarenessLinkError, json.JSONDecodeError, KeyError, TypeError) as exc:
            log.info("the Evaluator is not told of Awareness's adapters now: %s", exc)
            return ""
        lines = sorted(
            {
                f"- {adapter['name']}: {adapter.get('description', '')}".rstrip(": ")
                for adapter in adapters
            }
        )
        self._text = "\n".join(lines)
        self._read_at = time.monotonic()
        return self._text
