"""Which API key an LLM provider runs with: one precedence for the Mind and every command.

1. `[provider] api_key` (`TOBE_PROVIDER__API_KEY` sets it too);
2. the provider's usual variable (`KEY_VARIABLES`, in their order);
3. the key `tobe setup` stored for that kind (`provider_keys.stored_key`), asked last because
   reading it opens the store.

The Mind at start, `tobe up`'s provider check, `tobe setup`, `tobe models` and `tobe doctor`
all resolve through `with_api_key`, so a command never proves a key the Mind would not use.
Kinds without an API key (the scripted ones) are left as they are.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import SecretStr

from tobe.config import ProviderSettings

KeyedKind = Literal["openai", "anthropic", "gemini"]

KEY_VARIABLES: dict[KeyedKind, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}

# The key stored for a provider kind, or None (`provider_keys.stored_keys`).
KeyLookup = Callable[[str], str | None]


def key_variables(kind: str) -> tuple[str, ...]:
    """The usual variables of `kind`, in the order they are read; none for a keyless kind."""
    return next((names for known, names in KEY_VARIABLES.items() if known == kind), ())


def variable_key(kind: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(variable, key) of the first usual variable of `kind` set in `env`, or None."""
    for name in key_variables(kind):
        if env.get(name):
            return name, env[name]
    return None


def api_key(
    provider: ProviderSettings,
    stored: KeyLookup | None = None,
    env: Mapping[str, str] = os.environ,
) -> str | None:
    """The key `provider` runs with, by the module's precedence; None when there is none.

    `stored` is asked only when neither the settings nor a usual variable give one; it may
    raise (`ProviderKeyError`: a stored key that does not open)."""
    if provider.api_key is not None:
        return provider.api_key.get_secret_value()
    if not key_variables(provider.kind):
        return None
    found = variable_key(provider.kind, env)
    if found is not None:
        return found[1]
    return None if stored is None else stored(provider.kind)


def with_api_key(
    provider: ProviderSettings,
    stored: KeyLookup | None = None,
    env: Mapping[str, str] = os.environ,
) -> ProviderSettings:
    """`provider` with the key it runs with set in `api_key` (unchanged when it has none)."""
    if provider.api_key is not None:
        return provider
    key = api_key(provider, stored, env)
    return provider if key is None else provider.model_copy(update={"api_key": SecretStr(key)})
