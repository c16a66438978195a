"""Choosing a provider from the environment, for `tobe up` on a machine with a key set.

When nothing is configured or detected, the Mind plays the offline demo script (`DEMO_SCRIPT`).

Order: explicit `TOBE_PROVIDER__KIND` wins (with the other `TOBE_PROVIDER__*` values, the key
falling back to the provider's usual variable, in `tobe.api_keys`' order); otherwise
the first usual key found among ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY and
GOOGLE_API_KEY, with that provider's default model unless `TOBE_PROVIDER__MODEL` names one.
`OPENAI_BASE_URL` is honoured for the OpenAI-compatible kind.

Shared, not the Mind's: `tobe up` chooses the provider before it starts the Mind, and loads
none of the Mind's code to do so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from pydantic import SecretStr

from tobe.api_keys import KEY_VARIABLES, KeyedKind, variable_key
from tobe.config import ProviderSettings

# The offline demo script, played when no provider is configured.
DEMO_SCRIPT = Path(__file__).with_name("demo_script.yaml")

DEFAULT_MODELS: dict[KeyedKind, str] = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-4.1-mini",
    "gemini": "gemini-2.5-flash",
}
_PREFIX = "TOBE_PROVIDER__"
log = logging.getLogger("mind.providers")


def detect_provider(env: Mapping[str, str]) -> ProviderSettings | None:
    """The provider settings the environment asks for, or None; logs which one it chose."""
    detected = detect_with_reason(env)
    if detected is None:
        return None
    log.info("%s", detected[1])
    return detected[0]


def detect_with_reason(env: Mapping[str, str]) -> tuple[ProviderSettings, str] | None:
    """(settings, a sentence saying what was chosen and why) for `tobe up` to print."""
    explicit = env.get(_PREFIX + "KIND", "")
    if explicit:
        if explicit not in KEY_VARIABLES:
            # `scripted` (or a typo, which pydantic reports) is not auto-detection.
            return None
        kind: KeyedKind = explicit
        found = (
            (_PREFIX + "API_KEY", env[_PREFIX + "API_KEY"])
            if env.get(_PREFIX + "API_KEY")
            else variable_key(kind, env)
        )
        source = f"{_PREFIX}KIND={kind}"
    else:
        for kind in KEY_VARIABLES:
            found = variable_key(kind, env)
            if found:
                break
        else:
            return None
        source = found[0]
    model = env.get(_PREFIX + "MODEL") or DEFAULT_MODELS[kind]
    base_url = env.get(_PREFIX + "BASE_URL") or (
        env.get("OPENAI_BASE_URL", "") if kind == "openai" else ""
    )
    settings = ProviderSettings(
        kind=kind,
        model=model,
        base_url=base_url,
        api_key=SecretStr(found[1]) if found else None,
    )
    key_note = f"key from {found[0]}" if found else "no API key"
    where = f" at {base_url}" if base_url else ""
    return settings, f"using provider {kind}, model {model}{where} ({source}; {key_note})"
