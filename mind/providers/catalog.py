"""The model catalog: what each model accepts, so requests never ask for what it cannot do.

Each entry gives the context window, the largest output, whether the model sees images, the
thinking levels it supports and how its answer can be held to a JSON Schema
(`structured_output`: "json_schema" for an OpenAI-compatible `response_format` with the schema
or Gemini's `responseJsonSchema`, "json_object" for `response_format` without one, "tool" for
Anthropic's forced tool call, "none" for the prompt alone).

Operators add models (a local model behind an OpenAI-compatible server, a model newer than
this release) with `[[provider.models]]` entries in the config file. An unknown model id is a
configuration error raised before the Mind serves anything, with a message that says how to
fix it, except where the factory finds it in a self-hosted server's listing: then `assumed`
describes it with conservative limits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from mind.providers.base import ThinkingLevel
from tobe.config import ModelEntry, ProviderSettings

_ORDER = list(ThinkingLevel)
OFF = (ThinkingLevel.OFF,)
REASONING = (ThinkingLevel.LOW, ThinkingLevel.MEDIUM, ThinkingLevel.HIGH)
GPT5 = (ThinkingLevel.MINIMAL, *REASONING)
ALL_LEVELS = tuple(_ORDER)
GEMINI_25_FLASH = (ThinkingLevel.OFF, ThinkingLevel.MINIMAL, *REASONING)
GEMINI_25_PRO = (ThinkingLevel.MINIMAL, *REASONING)
GEMINI_3 = (ThinkingLevel.LOW, ThinkingLevel.HIGH)
# Each wire's structured output for its own models (the official APIs).
_WIRE_STRUCTURED = {"openai": "json_schema", "anthropic": "tool", "gemini": "json_schema"}


# Limits assumed for a model a self-hosted OpenAI-compatible server serves without saying its
# window: 4096 tokens is what Ollama, LM Studio and older llama-server builds load a model with
# unless told otherwise, so the smallest window such a model is likely to have; a larger real
# one is only wasted, a smaller one would make the server truncate or refuse.
ASSUMED_CONTEXT = 4096
ASSUMED_MAX_OUTPUT = 4096
# The share of a window a reply may take at most: a 4k-window model cannot give half of it to
# the reply and keep a conversation.
OUTPUT_SHARE = 4


class UnknownModelError(ValueError):
    """The configured model is neither built in nor added in the config file.

    Not a refusal: the provider factory turns it into a `ProviderConfigError`."""


@dataclass(frozen=True)
class ModelInfo:
    id: str
    context_window: int
    max_output: int
    vision: bool
    thinking_levels: tuple[ThinkingLevel, ...]
    # How the model can be held to a JSON Schema: "json_schema", "json_object", "tool", "none".
    structured_output: str = "none"
    # Where `context_window` came from, for the start-up log and `tobe doctor`.
    window_source: str = ""


def _builtin(kind: str, models: tuple[ModelInfo, ...]) -> tuple[ModelInfo, ...]:
    return tuple(replace(info, structured_output=_WIRE_STRUCTURED[kind]) for info in models)


def _m(
    model_id: str, context: int, output: int, vision: bool, levels: tuple[ThinkingLevel, ...]
) -> ModelInfo:
    return ModelInfo(model_id, context, output, vision, levels)


_BUILTIN: dict[str, tuple[ModelInfo, ...]] = {
    "openai": (
        _m("gpt-4o", 128_000, 16_384, True, OFF),
        _m("gpt-4o-mini", 128_000, 16_384, True, OFF),
        _m("gpt-4.1", 1_047_576, 32_768, True, OFF),
        _m("gpt-4.1-mini", 1_047_576, 32_768, True, OFF),
        _m("gpt-4.1-nano", 1_047_576, 32_768, True, OFF),
        _m("o3", 200_000, 100_000, True, REASONING),
        _m("o3-mini", 200_000, 100_000, False, REASONING),
        _m("o4-mini", 200_000, 100_000, True, REASONING),
        _m("gpt-5", 400_000, 128_000, True, GPT5),
        _m("gpt-5-mini", 400_000, 128_000, True, GPT5),
        _m("gpt-5-nano", 400_000, 128_000, True, GPT5),
    ),
    "anthropic": (
        _m("claude-opus-4-1", 200_000, 32_000, True, ALL_LEVELS),
        _m("claude-opus-4", 200_000, 32_000, True, ALL_LEVELS),
        _m("claude-sonnet-4-5", 200_000, 64_000, True, ALL_LEVELS),
        _m("claude-sonnet-4", 200_000, 64_000, True, ALL_LEVELS),
        _m("claude-haiku-4-5", 200_000, 64_000, True, ALL_LEVELS),
        _m("claude-3-7-sonnet", 200_000, 64_000, True, ALL_LEVELS),
        _m("claude-3-5-haiku", 200_000, 8_192, True, OFF),
    ),
    "gemini": (
        _m("gemini-3-pro-preview", 1_048_576, 65_536, True, GEMINI_3),
        _m("gemini-2.5-pro", 1_048_576, 65_536, True, GEMINI_25_PRO),
        _m("gemini-2.5-flash", 1_048_576, 65_536, True, GEMINI_25_FLASH),
        _m("gemini-2.5-flash-lite", 1_048_576, 65_536, True, GEMINI_25_FLASH),
        _m("gemini-2.0-flash", 1_048_576, 8_192, True, OFF),
        _m("gemini-2.0-flash-lite", 1_048_576, 8_192, True, OFF),
    ),
}
BUILTIN: dict[str, tuple[ModelInfo, ...]] = {
    kind: _builtin(kind, models) for kind, models in _BUILTIN.items()
}


def _from_entry(entry: ModelEntry) -> ModelInfo:
    try:
        levels = tuple(
            sorted({ThinkingLevel(level) for level in entry.thinking_levels}, key=_ORDER.index)
        )
    except ValueError as exc:
        raise UnknownModelError(
            f"[[provider.models]] id={entry.id!r}: {exc}; thinking levels are "
            + ", ".join(level.value for level in _ORDER)
        ) from exc
    return ModelInfo(
        entry.id,
        entry.context_window,
        entry.max_output,
        entry.vision,
        levels,
        entry.structured_output or "none",
    )


def _match(model_id: str, models: Iterable[ModelInfo]) -> ModelInfo | None:
    """Exact id, else the longest known id the given one extends with a dated suffix."""
    candidates = list(models)
    for info in candidates:
        if info.id == model_id:
            return info
    prefixed = [info for info in candidates if model_id.startswith(info.id + "-")]
    return max(prefixed, key=lambda info: len(info.id), default=None)


def lookup(settings: ProviderSettings) -> ModelInfo:
    """The catalog entry of the configured model; config entries win over built-in ones."""
    found = known(settings, settings.model)
    if found is not None:
        return found
    names = ", ".join(info.id for info in BUILTIN.get(settings.kind, ())) or "none"
    raise UnknownModelError(
        f"unknown model {settings.model!r} for provider {settings.kind!r} (known: {names}). "
        "Pick a known model with TOBE_PROVIDER__MODEL (or [provider] model), or describe it "
        "in the config file:\n"
        "  [[provider.models]]\n"
        f'  id = "{settings.model}"\n'
        "  context_window = 128000\n"
        "  max_output = 8192\n"
        "  vision = false\n"
        '  thinking_levels = ["off"]\n'
        "or, without a config file (Docker), in the environment: "
        f'TOBE_PROVIDER__MODELS=\'[{{"id": "{settings.model}", "context_window": 128000, '
        '"max_output": 8192}]\''
    )


def assumed(
    model_id: str,
    context: int | None = None,
    max_output: int | None = None,
    structured_output: str = "none",
) -> ModelInfo:
    """A listed model's entry: the server's limits where it gives them, else the assumed ones;
    no vision, thinking off, structured output as the server said (else none)."""
    window = context or ASSUMED_CONTEXT
    output = min(max_output or ASSUMED_MAX_OUTPUT, max(window // OUTPUT_SHARE, 1))
    return ModelInfo(model_id, window, output, False, OFF, structured_output)


def known(settings: ProviderSettings, model_id: str) -> ModelInfo | None:
    """The catalog entry (config or built-in) for `model_id` under `settings`' kind, or None.

    Structured output: the `[[provider.models]]` entry's own setting, else `[provider]
    structured_output`, else the built-in entry's."""
    entries = {entry.id: entry for entry in settings.models}
    added = _match(model_id, [_from_entry(entry) for entry in settings.models])
    if added is not None:
        chosen = entries[added.id].structured_output or settings.structured_output
        return replace(
            added, structured_output=chosen or "none", window_source="[[provider.models]]"
        )
    built_in = _match(model_id, BUILTIN.get(settings.kind, ()))
    if built_in is None:
        return None
    return replace(with_structured_output(settings, built_in), window_source="the catalog")


def with_structured_output(settings: ProviderSettings, info: ModelInfo) -> ModelInfo:
    """`info` (a built-in entry, or one a server described) with `[provider]
    structured_output` when it is set: the operator's word wins over the catalog's and the
    server's."""
    if settings.structured_output is None:
        return info
    return replace(info, structured_output=settings.structured_output)


def clamp_thinking(info: ModelInfo, level: ThinkingLevel) -> tuple[ThinkingLevel, str | None]:
    """The supported level nearest to `level` (the lower one on a tie) and a warning if moved.

    The caller logs the warning once per conversation.
    """
    if level in info.thinking_levels:
        return level, None
    wanted = _ORDER.index(level)
    nearest = min(
        info.thinking_levels, key=lambda lvl: (abs(_ORDER.index(lvl) - wanted), _ORDER.index(lvl))
    )
    supported = ", ".join(lvl.value for lvl in info.thinking_levels)
    return nearest, (
        f"model {info.id} does not support thinking level {level.value!r} "
        f"(supported: {supported}); using {nearest.value!r}"
    )
