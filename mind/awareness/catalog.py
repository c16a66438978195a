"""The adapters Awareness runs: for the decision layer's Evaluator, and for the approval path.

An observation condition names an adapter ("tell me when the build fails" watches the CI
webhook), so the Evaluator must know which adapters exist and what they observe (`text`). An
awareness tool call is judged by the adapter action it reaches (`entry`: the instance and
adapter names and each action's declared effect).

The list is asked of Awareness (`list_adapters`, the same engine action the
`awareness_observe` tool runs) when needed and kept for a minute: adapters come and go
rarely, and one registered again gets a new runtime id, so a runtime id missing from the
list kept asks again once.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mind.awareness.client import AwarenessClient
from mind.awareness.errors import AwarenessLinkError
from mind.tools.base import Effect

log = logging.getLogger(__name__)

KEEP_SECONDS = 60.0


class CatalogUnavailable(Exception):
    """Awareness could not be asked for its adapters now (unreachable, or a reply that is
    not the list). Internal: its callers fall back (an adapter call's effect is judged unknown)."""


@dataclass(frozen=True)
class AdapterEntry:
    """One registered adapter, as the approval path judges calls of its actions."""

    adapter_id: str
    # As Awareness lists it (what observations name as their adapter).
    name: str
    # The configured instance (`email@work`; the adapter's name for its default instance).
    instance: str
    # The adapter's own name (`email`), shared by its instances.
    adapter: str
    description: str
    reads: frozenset[str]
    # Write actions by name, with the effect each declares.
    writes: Mapping[str, Effect]


def _effect(value: object) -> Effect:
    try:
        return Effect(str(value))
    except ValueError:
        return Effect.UNKNOWN


def _entry(adapter: dict[str, Any]) -> AdapterEntry:
    name = str(adapter["name"])
    return AdapterEntry(
        adapter_id=str(adapter["adapter_id"]),
        name=name,
        instance=str(adapter.get("instance") or name),
        adapter=name.partition("@")[0],
        description=str(adapter.get("description", "")),
        reads=frozenset(str(action["name"]) for action in adapter.get("read_actions", [])),
        writes={
            str(action["name"]): _effect(action.get("effect"))
            for action in adapter.get("write_actions", [])
        },
    )


class AdapterCatalog:
    def __init__(self, client: AwarenessClient, keep_seconds: float = KEEP_SECONDS) -> None:
        self._client = client
        self._keep = keep_seconds
        self._entries: dict[str, AdapterEntry] = {}
        self._read_at = float("-inf")

    async def text(self) -> str:
        """One line per adapter (`- name: description`), or "" when Awareness runs none or
        cannot be reached now (the Evaluator then names no adapter it was not told of)."""
        try:
            entries = await self._current()
        except CatalogUnavailable as exc:
            log.info("the Evaluator is not told of Awareness's adapters now: %s", exc)
            return ""
        lines = {f"- {entry.name}: {entry.description}".rstrip(": ") for entry in entries.values()}
        return "\n".join(sorted(lines))

    async def entry(self, adapter_id: str) -> AdapterEntry | None:
        """The adapter running under `adapter_id`; None when Awareness runs none under it.
        Raises `CatalogUnavailable` when Awareness cannot be asked."""
        kept = self._fresh()
        entry = (self._entries if kept else await self._read()).get(adapter_id)
        if entry is None and kept:
            entry = (await self._read()).get(adapter_id)
        return entry

    async def _current(self) -> dict[str, AdapterEntry]:
        return self._entries if self._fresh() else await self._read()

    def _fresh(self) -> bool:
        return time.monotonic() - self._read_at < self._keep

    async def _read(self) -> dict[str, AdapterEntry]:
        try:
            result = await self._client.observe(
                f"catalog_{uuid.uuid4().hex}", "", "list_adapters", {}
            )
            entries = {
                entry.adapter_id: entry
                for entry in map(_entry, json.loads(result.content_json)["adapters"])
            }
        except AwarenessLinkError as exc:
            raise CatalogUnavailable(f"Awareness did not answer: {exc.status}") from exc
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise CatalogUnavailable(f"the adapter list did not read: {exc!r}") from exc
        self._entries = entries
        self._read_at = time.monotonic()
        return entries
