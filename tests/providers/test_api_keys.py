"""One precedence for a provider's API key: settings, then the usual variable, then the store.

The Mind's start (`build_http_provider`) and the commands (`tobe models`, `setup`, `doctor`,
`tobe up`'s check) all resolve through `with_api_key`; these prove its order, and that the
Mind and a command given the same store and environment pick the same key.
"""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from mind.credentials.provider_keys import MAIN, offline_keys, stored_keys
from mind.providers.factory import build_http_provider
from mind.providers.listing import api_key as listing_key
from tobe.api_keys import api_key, variable_key, with_api_key
from tobe.config import ProviderSettings, Settings, load_settings

GEMINI = ProviderSettings(kind="gemini", model="gemini-2.5-flash")


class Store:
    """A stored-key lookup that records which kinds it was asked for."""

    def __init__(self, key: str | None = "stored") -> None:
        self.key = key
        self.asked: list[str] = []

    def __call__(self, kind: str) -> str | None:
        self.asked.append(kind)
        return self.key


def test_the_configured_key_wins_over_the_variable_and_the_store() -> None:
    store = Store()
    configured = GEMINI.model_copy(update={"api_key": SecretStr("configured")})
    assert api_key(configured, store, {"GEMINI_API_KEY": "variable"}) == "configured"
    assert store.asked == []


def test_the_usual_variable_wins_over_the_store_in_its_own_order() -> None:
    store = Store()
    env = {"GOOGLE_API_KEY": "google", "GEMINI_API_KEY": "gemini"}
    assert api_key(GEMINI, store, env) == "gemini"
    assert api_key(GEMINI, store, {"GOOGLE_API_KEY": "google"}) == "google"
    assert variable_key("gemini", {"GOOGLE_API_KEY": "google"}) == ("GOOGLE_API_KEY", "google")
    assert store.asked == []


def test_the_stored_key_is_asked_last_and_only_for_its_kind() -> None:
    store = Store()
    assert api_key(GEMINI, store, {"OPENAI_API_KEY": "other kind", "GEMINI_API_KEY": ""}) == (
        "stored"
    )
    assert store.asked == ["gemini"]
    assert api_key(GEMINI, Store(None), {}) is None
    assert api_key(GEMINI, None, {}) is None


def test_a_kind_without_an_api_key_never_reads_the_variables_or_the_store() -> None:
    store = Store()
    scripted = ProviderSettings(kind="scripted")
    assert api_key(scripted, store, {"OPENAI_API_KEY": "x"}) is None
    assert with_api_key(scripted, store, {}) is scripted
    assert store.asked == []


def test_with_api_key_sets_the_resolved_key_and_keeps_the_rest() -> None:
    resolved = with_api_key(GEMINI, Store(), {})
    assert resolved.api_key is not None and resolved.api_key.get_secret_value() == "stored"
    assert resolved.model_copy(update={"api_key": None}) == GEMINI
    assert with_api_key(GEMINI, Store(None), {}) == GEMINI


def test_the_listing_uses_the_same_order_without_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "variable")
    assert listing_key(GEMINI) == "variable"
    assert listing_key(GEMINI.model_copy(update={"api_key": SecretStr("set")})) == "set"


@pytest.mark.parametrize("variable", [None, "from-variable"])
def test_the_mind_and_the_commands_resolve_the_same_key(
    tmp_path, monkeypatch: pytest.MonkeyPatch, variable: str | None
) -> None:
    for name in ("ANTHROPIC_API_KEY", "TOBE_PROVIDER__API_KEY"):
        monkeypatch.delenv(name, raising=False)
    if variable is not None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", variable)
    settings: Settings = load_settings(data_dir=tmp_path / "data")
    with offline_keys(settings) as keys:
        keys.put(MAIN, "anthropic", "from-store", actor="test")
    provider = ProviderSettings(kind="anthropic", model="claude-sonnet-4-5")
    command = with_api_key(provider, stored_keys(settings))
    mind = build_http_provider(provider, stored_key=stored_keys(settings))
    expected = variable or "from-store"
    assert command.api_key is not None and command.api_key.get_secret_value() == expected
    assert mind.headers()["x-api-key"] == expected  # type: ignore[attr-defined]
