"""Build the configured Provider from `ProviderSettings`."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from pydantic import SecretStr

from mind.providers.anthropic import AnthropicProvider
from mind.providers.base import Provider, ThinkingLevel
from mind.providers.catalog import ModelInfo, UnknownModelError, lookup
from mind.providers.detect import DEMO_SCRIPT, KEY_VARIABLES
from mind.providers.gemini import GeminiProvider
from mind.providers.openai import OpenAIProvider
from mind.providers.scripted import ScriptedProvider
from tobe.config import ProviderSettings

log = logging.getLogger(__name__)


class ProviderConfigError(ValueError):
    """The provider settings cannot work (missing field, unreadable or invalid script)."""


def thinking_level(settings: ProviderSettings) -> ThinkingLevel:
    """The configured thinking level; ProviderConfigError when it is not one."""
    if settings.thinking not in set(ThinkingLevel):
        levels = ", ".join(level.value for level in ThinkingLevel)
        raise ProviderConfigError(
            f"[provider] thinking {settings.thinking!r} is not a thinking level; use one of "
            f"{levels} (TOBE_PROVIDER__THINKING)"
        )
    return ThinkingLevel(settings.thinking)


def build_provider(settings: ProviderSettings) -> Provider:
    """The provider for `settings`; ProviderConfigError (or ScriptError) says what to fix."""
    thinking_level(settings)
    if settings.kind == "":
        log.warning("no provider configured ([provider] kind); playing the offline demo script")
        return ScriptedProvider.from_file(DEMO_SCRIPT)
    if settings.kind == "scripted":
        if settings.script is None:
            raise ProviderConfigError(
                "provider kind 'scripted' needs a script file: set [provider] script "
                "(TOBE_PROVIDER__SCRIPT)"
            )
        return ScriptedProvider.from_file(settings.script, _scripted_model(settings))
    if settings.kind in _ADAPTERS:
        return _wire_provider(settings)
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


def _wire_provider(settings: ProviderSettings) -> Provider:
    """An HTTP adapter for a model the catalog knows."""
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
    if settings.api_key is None and settings.kind != "openai":
        names = " or ".join(KEY_VARIABLES[settings.kind])  # type: ignore[index]
        raise ProviderConfigError(
            f"provider {settings.kind!r} needs an API key: set TOBE_PROVIDER__API_KEY, {names}, "
            "or [provider] api_key in the config file"
        )
    try:
        info = lookup(settings)
    except UnknownModelError as exc:
        raise ProviderConfigError(str(exc)) from exc
    return _ADAPTERS[settings.kind](settings, info)
