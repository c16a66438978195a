"""What a provider offers and what the Mind would accept of it, for `tobe models` and `tobe setup`.

The verdict per listed model is the Mind's own rule (`mind.providers.factory`): a model the
catalog knows (built in or `[[provider.models]]`) runs with its entry; a model only a
self-hosted OpenAI-compatible server lists runs with the window that server reports
(`management.local_servers`), else the assumed one; any other model would stop the Mind's
start.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from enum import StrEnum

from management.local_servers import ServedModel, served
from mind.providers.catalog import BUILTIN, ModelInfo, assumed, known
from mind.providers.listing import ListedModel, is_self_hosted, list_models
from tobe.config import ProviderSettings

OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1"
# What a person picks → (provider kind, base URL; "" = the kind's official API). The local
# servers are OpenAI-compatible, each on its usual port.
CHOICES: dict[str, tuple[str, str]] = {
    "openai": ("openai", ""),
    "anthropic": ("anthropic", ""),
    "gemini": ("gemini", ""),
    "ollama": ("openai", OLLAMA_BASE_URL),
    "llama-server": ("openai", "http://127.0.0.1:8080/v1"),
    "vllm": ("openai", "http://127.0.0.1:8000/v1"),
    "lmstudio": ("openai", "http://127.0.0.1:1234/v1"),
}
LISTING_TIMEOUT = 10.0


class Verdict(StrEnum):
    CATALOG = "catalog"
    DEFAULTS = "defaults"
    REFUSED = "refused"


@dataclass(frozen=True)
class ModelRow:
    """One listed model and what the Mind would do with it."""

    id: str
    verdict: Verdict
    # Its entry (catalog, or the assumed one); None when refused.
    info: ModelInfo | None
    # What a self-hosted server said about it (its window); None for a catalog model.
    served: ServedModel | None = None


def fetch(provider: ProviderSettings) -> list[ListedModel]:
    """The provider's listing; ListingError (one line) when it cannot be had."""
    return asyncio.run(list_models(provider, timeout=LISTING_TIMEOUT))


def verdict(
    provider: ProviderSettings, model: ListedModel, told: ServedModel | None = None
) -> ModelRow:
    info = known(provider, model.id)
    if info is not None:
        return ModelRow(model.id, Verdict.CATALOG, info)
    if is_self_hosted(provider):
        facts = told.facts if told is not None else None
        window = (facts.context_window if facts else None) or model.context_window
        capability = facts.structured_output if facts else "none"
        entry = assumed(model.id, window, model.max_output, capability)
        if facts is not None and facts.source:
            entry = replace(entry, window_source=facts.source)
        return ModelRow(model.id, Verdict.DEFAULTS, entry, told)
    return ModelRow(model.id, Verdict.REFUSED, None)


def rows(provider: ProviderSettings, listed: list[ListedModel]) -> list[ModelRow]:
    """Each listed model's verdict; a self-hosted server is asked what it serves each with."""
    told = served(provider, listed) if is_self_hosted(provider) else {}
    return [verdict(provider, model, told.get(model.id)) for model in listed]


def catalog(provider: ProviderSettings) -> list[ModelInfo]:
    """The built-in entries of the kind, then the config's own (`[[provider.models]]`), which
    replace a built-in entry of the same id."""
    added = [info for entry in provider.models if (info := known(provider, entry.id))]
    replaced = {info.id for info in added}
    builtin = [info for info in BUILTIN.get(provider.kind, ()) if info.id not in replaced]
    return [*builtin, *added]
