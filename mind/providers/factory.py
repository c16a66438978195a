"""Build an HTTP adapter (OpenAI-compatible, Anthropic, Gemini) from `ProviderSettings`.

The API key is resolved by `tobe.api_keys` (`[provider] api_key`, else the
provider's usual variable, else the key `tobe setup` stored). The model must be in the
catalog, or served by a self-hosted OpenAI-compatible server (a non-default base URL): then it
runs with the window that server reports (`mind.providers.self_hosted`). On the official
APIs an unknown id stops the start at once, without asking the provider anything. The
scripted kinds are built above the layers their scripts answer (`mind.scripted.configured`).

Only the configured kind's adapter module is imported (with `httpx` under it): a Mind playing a
script, or talking to one provider, never loads the others.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from pathlib import Path

from mind.providers.base import Provider, ThinkingLevel
from mind.providers.catalog import ModelInfo, UnknownModelError, lookup, with_structured_output
from tobe.api_keys import KeyLookup, key_variables, with_api_key
from tobe.config import ProviderSettings

log = logging.getLogger(__name__)


class ProviderConfigError(ValueError):
    """The provider settings cannot work (missing field, unreadable or invalid script).

    Not a refusal: it stops the Mind from starting (or a profile from building its provider)."""


def thinking_level(settings: ProviderSettings) -> ThinkingLevel:
    """The configured thinking level; ProviderConfigError when it is not one."""
    if settings.thinking not in set(ThinkingLevel):
        levels = ", ".join(level.value for level in ThinkingLevel)
        raise ProviderConfigError(
            f"[provider] thinking {settings.thinking!r} is not a thinking level; use one of "
            f"{levels} (TOBE_PROVIDER__THINKING)"
        )
    return ThinkingLevel(settings.thinking)


def build_http_provider(
    settings: ProviderSettings,
    *,
    stored_key: KeyLookup | None = None,
    cache_dir: Path | None = None,
) -> Provider:
    """The adapter for `settings`; ProviderConfigError says what to fix.

    `stored_key(kind)` is the key stored for that kind, asked only when no other is set. Call
    it outside an event loop: a self-hosted model is looked up on its server; `cache_dir`
    remembers the windows servers report (`mind.providers.self_hosted`)."""
    thinking_level(settings)
    if settings.kind in _ADAPTERS:
        return _wire_provider(settings, stored_key, cache_dir)
    raise ProviderConfigError(f"provider kind {settings.kind!r} is not available in this build")


# kind -> (module, class) of its adapter, imported when a provider of that kind is built.
_ADAPTERS = {
    "openai": ("mind.providers.openai", "OpenAIProvider"),
    "anthropic": ("mind.providers.anthropic", "AnthropicProvider"),
    "gemini": ("mind.providers.gemini", "GeminiProvider"),
}


def _adapter(kind: str) -> Callable[[ProviderSettings, ModelInfo], Provider]:
    module, name = _ADAPTERS[kind]
    adapter: Callable[[ProviderSettings, ModelInfo], Provider]
    adapter = getattr(importlib.import_module(module), name)
    return adapter


def _wire_provider(
    settings: ProviderSettings, stored_key: KeyLookup | None, cache_dir: Path | None
) -> Provider:
    """An HTTP adapter for a model the catalog knows or a self-hosted server lists."""
    if not settings.model:
        raise ProviderConfigError(
            f"provider kind {settings.kind!r} needs a model: set [provider] model "
            "(TOBE_PROVIDER__MODEL)"
        )
    if settings.base_url and not settings.base_url.startswith(("http://", "https://")):
        raise ProviderConfigError(
            f"[provider] base_url {settings.base_url!r} must start with http:// or https:// "
            "(TOBE_PROVIDER__BASE_URL)"
        )
    settings = with_api_key(settings, stored_key)
    if settings.api_key is None and settings.kind != "openai":
        names = " or ".join(key_variables(settings.kind))
        raise ProviderConfigError(
            f"provider {settings.kind!r} needs an API key: store one with `tobe setup`, or set "
            f"TOBE_PROVIDER__API_KEY or {names}"
        )
    try:
        info = lookup(settings)
    except UnknownModelError as exc:
        info = _listed_model(settings, exc, cache_dir)
    return _adapter(settings.kind)(settings, info)


def _listed_model(
    settings: ProviderSettings, unknown: UnknownModelError, cache_dir: Path | None
) -> ModelInfo:
    """The entry of a model only a self-hosted server knows (`mind.providers.self_hosted`)."""
    from mind.providers.listing import is_self_hosted
    from mind.providers.self_hosted import UnservedModel, served_model

    if not is_self_hosted(settings):
        raise ProviderConfigError(str(unknown)) from None
    try:
        return with_structured_output(settings, served_model(settings, cache_dir))
    except UnservedModel as exc:
        raise ProviderConfigError(str(exc)) from None
