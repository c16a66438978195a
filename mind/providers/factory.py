"""Build the configured Provider from `ProviderSettings`.

The API key comes from `[provider] api_key`, else the provider's usual variable, else the key
`tobe setup` stored (`stored_key`). The model must be in the catalog, or listed by a
self-hosted OpenAI-compatible server (a non-default base URL): then it runs with the catalog's
assumed limits and one warning. On the official APIs an unknown id stops the start at once,
without asking the provider anything.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from pydantic import SecretStr

from mind.providers.anthropic import AnthropicProvider
from mind.providers.base import Provider, ThinkingLevel
from mind.providers.catalog import (
    ASSUMED_CONTEXT,
    ModelInfo,
    UnknownModelError,
    assumed,
    lookup,
)
from mind.providers.demo import demo_provider
from mind.providers.detect import KEY_VARIABLES
from mind.providers.gemini import GeminiProvider
from mind.providers.listing import ListingError, base_url, is_self_hosted, list_models
from mind.providers.openai import OpenAIProvider
from mind.providers.scripted import ScriptedProvider
from tobe.config import ProviderSettings

log = logging.getLogger(__name__)

# Seconds the start waits for a self-hosted server to list its models.
LISTING_TIMEOUT = 5.0
StoredKey = Callable[[str], str | None]


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


def build_provider(settings: ProviderSettings, *, stored_key: StoredKey | None = None) -> Provider:
    """The provider for `settings`; ProviderConfigError (or ScriptError) says what to fix.

    `stored_key(kind)` is the key stored for that kind, asked only when no other is set. Call
    it outside an event loop: a self-hosted model is looked up in the server's listing."""
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
    if settings.kind in _ADAPTERS:
        return _wire_provider(settings, stored_key)
    raise ProviderConfigError(f"provider kind {settings.kind!r} is not available in this build")


def _scripted_model(settings: ProviderSettings) -> ModelInfo | None:
    """The scripted model's catalog entry when `[provider] model` names one (its window is
    then enforced and compaction keeps requests within it)."""
    if not settings.model:
        return None
    try:
        return lookup(settings)
    except UnknownModelError as exc:
        raise ProviderConfigError(str(exc)) from exc


_ADAPTERS: dict[str, Callable[[ProviderSettings, ModelInfo], Provider]] = {
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
}


def _wire_provider(settings: ProviderSettings, stored_key: StoredKey | None) -> Provider:
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
    if settings.api_key is None:
        for name in KEY_VARIABLES[settings.kind]:  # type: ignore[index]
            if os.environ.get(name):
                settings = settings.model_copy(update={"api_key": SecretStr(os.environ[name])})
                break
    if settings.api_key is None and stored_key is not None:
        key = stored_key(settings.kind)
        if key is not None:
            settings = settings.model_copy(update={"api_key": SecretStr(key)})
    if settings.api_key is None and settings.kind != "openai":
        names = " or ".join(KEY_VARIABLES[settings.kind])  # type: ignore[index]
        raise ProviderConfigError(
            f"provider {settings.kind!r} needs an API key: store one with `tobe setup`, or set "
            f"TOBE_PROVIDER__API_KEY or {names}"
        )
    try:
        info = lookup(settings)
    except UnknownModelError as exc:
        info = _listed_model(settings, exc)
    return _ADAPTERS[settings.kind](settings, info)


def _listed_model(settings: ProviderSettings, unknown: UnknownModelError) -> ModelInfo:
    """The entry of a model only a self-hosted server knows, if it lists it (module docstring)."""
    if not is_self_hosted(settings):
        raise ProviderConfigError(str(unknown)) from None
    try:
        listed = asyncio.run(list_models(settings, timeout=LISTING_TIMEOUT))
    except ListingError as exc:
        raise ProviderConfigError(
            f"model {settings.model!r} is not in the catalog and the server could not be asked "
            f"whether it serves it ({exc.problem}); start the server or fix [provider] base_url "
            "(TOBE_PROVIDER__BASE_URL), or describe the model in [[provider.models]] "
            "(TOBE_PROVIDER__MODELS)"
        ) from None
    found = next((model for model in listed if model.id == settings.model), None)
    if found is None:
        names = ", ".join(model.id for model in listed) or "none"
        raise ProviderConfigError(
            f"model {settings.model!r} is not in the catalog and {base_url(settings)} does not "
            f"list it (it lists: {names}); set [provider] model (TOBE_PROVIDER__MODEL) to one "
            "of those"
        )
    info = assumed(found.id, found.context_window, found.max_output)
    limits = "listed" if found.context_window else f"assumed (default {ASSUMED_CONTEXT})"
    log.warning(
        "model %r is not in the catalog; %s lists it, so it runs with a context window of %d "
        "tokens (%s), at most %d output tokens, no images and thinking off. Give its real "
        "values in the config file ([[provider.models]] id = %r, context_window, max_output, "
        'vision, thinking_levels) or as TOBE_PROVIDER__MODELS=\'[{"id": %r, '
        '"context_window": …, "max_output": …}]\'',
        info.id,
        base_url(settings),
        info.context_window,
        limits,
        info.max_output,
        info.id,
        info.id,
    )
    return info
