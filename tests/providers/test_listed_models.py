"""The factory's acceptance of models only a self-hosted server knows, and the stored key."""

from __future__ import annotations

import logging
import socket

import pytest
from model_server import ModelServer, openai_pages
from pydantic import SecretStr

from mind.providers.catalog import ASSUMED_CONTEXT, OUTPUT_SHARE
from mind.providers.factory import ProviderConfigError
from mind.providers.openai import OpenAIProvider
from mind.scripted.configured import build_provider
from tobe.config import ProviderSettings


def _settings(url: str, model: str) -> ProviderSettings:
    return ProviderSettings(kind="openai", base_url=url, model=model, api_key=SecretStr("k"))


def test_a_model_a_server_lists_without_a_window_runs_with_the_default_and_one_warning(caplog):
    with ModelServer(openai_pages("mock-1")) as server:
        with caplog.at_level(logging.WARNING, logger="mind.providers.factory"):
            provider = build_provider(_settings(server.url + "/v1", "mock-1"))
    assert isinstance(provider, OpenAIProvider)
    info = provider.info
    assert (info.context_window, info.max_output, info.vision) == (
        ASSUMED_CONTEXT,
        ASSUMED_CONTEXT // OUTPUT_SHARE,
        False,
    )
    (warning,) = caplog.messages
    assert "mock-1" in warning and "[[provider.models]]" in warning
    assert "TOBE_PROVIDER__MODELS" in warning and str(ASSUMED_CONTEXT) in warning


def test_the_window_a_server_lists_wins_over_the_assumed_one():
    pages = {"/v1/models": {"": {"data": [{"id": "big", "max_model_len": 65536}]}}}
    with ModelServer(pages) as server:
        provider = build_provider(_settings(server.url + "/v1", "big"))
    assert provider.info.context_window == 65536  # type: ignore[attr-defined]


def test_a_model_the_server_does_not_list_is_refused_naming_what_it_lists():
    with ModelServer(openai_pages("llama3.2", "qwen2.5")) as server:
        with pytest.raises(ProviderConfigError, match="it lists: llama3.2, qwen2.5"):
            build_provider(_settings(server.url + "/v1", "mock-1"))


def test_an_unknown_model_of_a_server_that_does_not_answer_is_refused_in_one_line():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ProviderConfigError) as caught:
        build_provider(_settings(f"http://127.0.0.1:{port}/v1", "mock-1"))
    (line,) = str(caught.value).splitlines()
    assert f"cannot reach http://127.0.0.1:{port}/v1/models" in line
    assert "[provider] base_url" in line and "[[provider.models]]" in line


def test_an_unknown_id_on_the_official_api_is_refused_without_asking_it():
    with pytest.raises(ProviderConfigError) as caught:
        build_provider(_settings("", "mock-1"))
    message = str(caught.value)
    assert "[[provider.models]]" in message and "TOBE_PROVIDER__MODELS" in message
    assert "could not be asked" not in message


def test_the_stored_key_is_used_only_when_no_other_is_set(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    asked: list[str] = []

    def stored(kind: str) -> str:
        asked.append(kind)
        return "stored-key"

    settings = ProviderSettings(kind="anthropic", model="claude-sonnet-4-5")
    provider = build_provider(settings, stored_key=stored)
    assert provider.headers()["x-api-key"] == "stored-key"  # type: ignore[attr-defined]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    provider = build_provider(settings, stored_key=stored)
    assert provider.headers()["x-api-key"] == "from-env"  # type: ignore[attr-defined]
    assert asked == ["anthropic"]
