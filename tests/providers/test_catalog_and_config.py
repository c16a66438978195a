"""Model catalog, thinking-level clamping, provider factory and auto-detection."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from mind.providers.anthropic import AnthropicProvider
from mind.providers.base import ThinkingLevel
from mind.providers.catalog import UnknownModelError, clamp_thinking, lookup
from mind.providers.factory import ProviderConfigError
from mind.providers.gemini import GeminiProvider
from mind.providers.openai import OpenAIProvider
from mind.scripted.configured import build_provider
from tobe.config import ModelEntry, ProviderSettings, Settings
from tobe.provider_detect import detect_provider, detect_with_reason


def test_dated_model_ids_resolve_to_their_catalog_entry():
    info = lookup(ProviderSettings(kind="anthropic", model="claude-sonnet-4-5-20250929"))
    assert info.id == "claude-sonnet-4-5"
    assert info.context_window == 200_000
    assert info.vision is True


def test_unknown_model_error_says_how_to_add_it():
    with pytest.raises(UnknownModelError) as caught:
        lookup(ProviderSettings(kind="openai", model="qwen2.5:7b"))
    message = str(caught.value)
    assert "qwen2.5:7b" in message
    assert "[[provider.models]]" in message
    assert "TOBE_PROVIDER__MODEL" in message
    assert "gpt-4o" in message


def test_operator_added_model_comes_from_the_config_file(tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text(
        '[provider]\nkind = "openai"\nmodel = "qwen2.5:7b"\nbase_url = "http://127.0.0.1:11434/v1"\n'
        '[[provider.models]]\nid = "qwen2.5:7b"\ncontext_window = 32768\nmax_output = 4096\n'
        'thinking_levels = ["off", "high"]\n'
    )
    monkeypatch.setenv("TOBE_CONFIG", str(config))
    settings = Settings().provider

    info = lookup(settings)

    assert (info.id, info.context_window, info.max_output, info.vision) == (
        "qwen2.5:7b",
        32768,
        4096,
        False,
    )
    assert info.thinking_levels == (ThinkingLevel.OFF, ThinkingLevel.HIGH)


def test_unknown_thinking_level_in_config_is_refused():
    entry = ModelEntry(id="m", context_window=10, max_output=5, thinking_levels=["huge"])
    with pytest.raises(UnknownModelError, match="thinking levels are off, minimal"):
        lookup(ProviderSettings(kind="openai", model="m", models=[entry]))


@pytest.mark.parametrize(
    ("model", "wanted", "used"),
    [
        ("o3", ThinkingLevel.OFF, ThinkingLevel.LOW),
        ("o3", ThinkingLevel.XHIGH, ThinkingLevel.HIGH),
        ("gpt-4o", ThinkingLevel.HIGH, ThinkingLevel.OFF),
        ("gpt-5", ThinkingLevel.MINIMAL, ThinkingLevel.MINIMAL),
    ],
)
def test_unsupported_thinking_level_clamps_to_the_nearest_with_a_warning(model, wanted, used):
    info = lookup(ProviderSettings(kind="openai", model=model))
    level, warning = clamp_thinking(info, wanted)
    assert level == used
    if wanted == used:
        assert warning is None
    else:
        assert warning is not None
        assert model in warning and repr(wanted.value) in warning and repr(used.value) in warning


def test_gemini_3_medium_clamps_down_on_a_tie():
    info = lookup(ProviderSettings(kind="gemini", model="gemini-3-pro-preview"))
    assert clamp_thinking(info, ThinkingLevel.MEDIUM)[0] == ThinkingLevel.LOW


@pytest.mark.parametrize(
    ("kind", "model", "adapter"),
    [
        ("openai", "gpt-4o", OpenAIProvider),
        ("anthropic", "claude-sonnet-4-5", AnthropicProvider),
        ("gemini", "gemini-2.5-flash", GeminiProvider),
    ],
)
def test_factory_builds_each_wire_adapter(kind, model, adapter):
    provider = build_provider(
        ProviderSettings(kind=kind, model=model, api_key=SecretStr("k"))  # type: ignore[arg-type]
    )
    assert isinstance(provider, adapter)
    assert provider.name == kind and provider.model == model


def test_factory_refuses_an_unknown_model_before_anything_starts():
    with pytest.raises(ProviderConfigError, match=r"\[\[provider.models\]\]"):
        build_provider(ProviderSettings(kind="gemini", model="gemini-9", api_key=SecretStr("k")))


def test_factory_takes_the_usual_key_variable_and_requires_one(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        build_provider(ProviderSettings(kind="anthropic", model="claude-sonnet-4-5"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    provider = build_provider(ProviderSettings(kind="anthropic", model="claude-sonnet-4-5"))
    assert provider.headers()["x-api-key"] == "from-env"  # type: ignore[attr-defined]


def test_detection_prefers_the_explicit_kind():
    settings, reason = detect_with_reason(
        {
            "TOBE_PROVIDER__KIND": "openai",
            "TOBE_PROVIDER__BASE_URL": "http://127.0.0.1:8000/v1",
            "TOBE_PROVIDER__MODEL": "gpt-4o",
            "OPENAI_API_KEY": "sk-1",
            "ANTHROPIC_API_KEY": "a",
        }
    )
    assert (settings.kind, settings.model, settings.base_url) == (
        "openai",
        "gpt-4o",
        "http://127.0.0.1:8000/v1",
    )
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "sk-1"
    assert "openai" in reason and "OPENAI_API_KEY" in reason and "sk-1" not in reason


@pytest.mark.parametrize(
    ("env", "kind", "variable"),
    [
        ({"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}, "anthropic", "ANTHROPIC_API_KEY"),
        ({"OPENAI_API_KEY": "o", "GEMINI_API_KEY": "g"}, "openai", "OPENAI_API_KEY"),
        ({"GOOGLE_API_KEY": "g"}, "gemini", "GOOGLE_API_KEY"),
    ],
)
def test_detection_picks_the_first_usual_key_and_says_so(env, kind, variable, caplog):
    with caplog.at_level("INFO", logger="mind.providers"):
        settings = detect_provider(env)
    assert settings is not None and settings.kind == kind
    lookup(settings)
    assert any(kind in r.getMessage() and variable in r.getMessage() for r in caplog.records)


def test_detection_finds_nothing_without_keys():
    assert detect_provider({"PATH": "/usr/bin"}) is None
    assert detect_provider({"TOBE_PROVIDER__KIND": "scripted"}) is None


def test_factory_refuses_a_thinking_level_that_does_not_exist():
    with pytest.raises(ProviderConfigError, match="TOBE_PROVIDER__THINKING"):
        build_provider(
            ProviderSettings(kind="openai", model="o3", thinking="max", api_key=SecretStr("k"))
        )


def test_factory_refuses_a_base_url_without_a_scheme():
    with pytest.raises(ProviderConfigError, match="TOBE_PROVIDER__BASE_URL"):
        build_provider(
            ProviderSettings(
                kind="openai", model="gpt-4o", base_url="localhost:8000", api_key=SecretStr("k")
            )
        )
