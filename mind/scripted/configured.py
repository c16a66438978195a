"""The provider `[provider]` configures: the offline demo, a script, or an HTTP adapter.

The choice is made here, above `mind.providers`, because the scripted kinds play scripts that
answer the Mind's own prompts; the adapters are built below (`mind.providers.factory`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from mind.providers.base import Provider
from mind.providers.catalog import ModelInfo, UnknownModelError, lookup
from mind.providers.factory import ProviderConfigError, build_http_provider, thinking_level
from mind.scripted.demo import demo_provider
from mind.scripted.provider import ScriptedProvider
from tobe.api_keys import KeyLookup
from tobe.config import ProviderSettings

log = logging.getLogger(__name__)


def build_provider(
    settings: ProviderSettings,
    *,
    stored_key: KeyLookup | None = None,
    cache_dir: Path | None = None,
) -> Provider:
    """The provider for `settings`; ProviderConfigError (or ScriptError) says what to fix.

    `stored_key` and `cache_dir` serve the adapters (`build_http_provider`); call this outside
    an event loop."""
    thinking_level(settings)
    if settings.kind == "":
        log.warning("no provider configured ([provider] kind); playing the offline demo script")
        return demo_provider()
    if settings.kind == "scripted":
        if settings.script is None:
            raise ProviderConfigError(
                "provider kind 'scripted' needs a script file: set [provider] script "
                "(TOBE_PROVIDER__SCRIPT)"
            )
        return ScriptedProvider.from_file(settings.script, _scripted_model(settings))
    return build_http_provider(settings, stored_key=stored_key, cache_dir=cache_dir)


def _scripted_model(settings: ProviderSettings) -> ModelInfo | None:
    """The scripted model's catalog entry when `[provider] model` names one (its window is
    then enforced and compaction keeps requests within it)."""
    if not settings.model:
        return None
    try:
        return lookup(settings)
    except UnknownModelError as exc:
        raise ProviderConfigError(str(exc)) from exc
