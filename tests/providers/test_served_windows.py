"""A model only a self-hosted server knows runs with the window that server loaded it with."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from helpers.local_server_base import Reply
from helpers.local_servers import KINDS, OllamaServer, local_server
from helpers.ports import free_port
from pydantic import SecretStr

from mind.context.budget import Budget
from mind.providers.catalog import OUTPUT_SHARE, ModelInfo
from mind.providers.factory import ProviderConfigError
from mind.providers.self_hosted import CACHE_FILE
from mind.scripted.configured import build_provider
from tobe.config import ContextSettings, ProviderSettings

SOURCES = {
    "llama-server": "/props",
    "ollama": "/api/ps",
    "vllm": "max_model_len",
    "lmstudio": "/api/v0/models",
}


def _info(base_url: str, model: str, cache: Path | None = None) -> ModelInfo:
    settings = ProviderSettings(
        kind="openai", base_url=base_url, model=model, api_key=SecretStr("")
    )
    provider = build_provider(settings, cache_dir=cache)
    info: ModelInfo = provider.info  # type: ignore[attr-defined]
    return info


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_loaded_window_is_the_limit_never_the_models_maximum(kind, tmp_path, caplog):
    with local_server(kind, loaded_window=6144, max_window=131072) as fake:
        with caplog.at_level(logging.INFO, logger="mind.providers.factory"):
            info = _info(fake.base_url, fake.model, tmp_path)
    assert info.context_window == 6144
    assert SOURCES[kind] in info.window_source
    assert info.max_output == 6144 // OUTPUT_SHARE
    assert info.structured_output == "json_schema"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    (line,) = [r.getMessage() for r in caplog.records if "context window" in r.getMessage()]
    assert "6144" in line
    if kind in ("ollama", "lmstudio"):  # the servers that also say the model's maximum
        assert "the model's maximum is 131072" in line


def test_an_ollama_name_without_its_tag_resolves_to_latest(tmp_path):
    with local_server("ollama", model="qwen2.5:latest", loaded_window=8192) as fake:
        info = _info(fake.base_url, "qwen2.5", tmp_path)
    assert (info.id, info.context_window) == ("qwen2.5:latest", 8192)


def test_the_window_is_remembered_for_a_start_while_the_server_is_down(tmp_path, caplog):
    with local_server("llama-server", loaded_window=12288) as fake:
        base_url, model = fake.base_url, fake.model
        _info(base_url, model, tmp_path)
    assert (tmp_path / CACHE_FILE).exists()
    caplog.clear()  # what the first start logged (INFO, if another test left that level on)
    with caplog.at_level(logging.WARNING, logger="mind.providers.factory"):
        info = _info(base_url, model, tmp_path)
    assert info.context_window == 12288
    assert "remembered" in info.window_source
    (warning,) = caplog.messages
    assert "did not answer" in warning and "12288" in warning


def test_a_server_that_is_down_and_never_seen_stops_the_start_in_one_line(tmp_path):
    with local_server("vllm") as fake:
        base_url, model = fake.base_url, fake.model
    with pytest.raises(ProviderConfigError) as caught:
        _info(base_url, model, tmp_path)
    (line,) = str(caught.value).splitlines()
    assert "[[provider.models]]" in line and "[provider] base_url" in line


def test_a_configured_window_wins_over_what_the_server_says():
    with local_server("ollama", loaded_window=2048) as fake:
        settings = ProviderSettings.model_validate(
            {
                "kind": "openai",
                "base_url": fake.base_url,
                "model": fake.model,
                "models": [{"id": fake.model, "context_window": 32768, "max_output": 2048}],
            }
        )
        provider = build_provider(settings)
    info = provider.info  # type: ignore[attr-defined]
    assert (info.context_window, info.window_source) == (32768, "[[provider.models]]")
    assert fake.gets == [] or all("/api/" not in path for path in fake.gets)


def test_a_4k_window_leaves_most_of_itself_to_the_conversation(tmp_path):
    with local_server("llama-server", loaded_window=4096) as fake:
        info = _info(fake.base_url, fake.model, tmp_path)
    budget = Budget.of(info, ContextSettings())
    assert (budget.output_tokens, budget.reserve_tokens, budget.prompt_limit) == (1024, 512, 2560)


class _OllamaNotLoaded(OllamaServer):
    """An Ollama that has not loaded the model yet (`/api/ps` lists nothing), its Modelfile
    setting `num_ctx` when `num_ctx` is given."""

    num_ctx: int | None = None

    def get(self, path: str) -> Reply | None:
        if path == "/api/ps":
            return Reply.json(200, {"models": []})
        return super().get(path)

    def post(self, path: str, body: object) -> Reply | None:
        reply = super().post(path, body)
        if reply is not None and path == "/api/show" and self.num_ctx:
            shown = dict(reply.body)
            shown["parameters"] += f"\nnum_ctx                        {self.num_ctx}"
            return Reply.json(200, shown)
        return reply


def _not_loaded(num_ctx: int | None = None, port: int = 0) -> _OllamaNotLoaded:
    server = _OllamaNotLoaded(
        model="qwen2.5:latest", loaded_window=4096, max_window=32768, port=port, reply_chars=400
    )
    server.num_ctx = num_ctx
    return server


def test_an_ollama_model_not_loaded_yet_runs_with_its_modelfile_num_ctx(tmp_path):
    with _not_loaded(num_ctx=8192) as fake:
        info = _info(fake.base_url, fake.model, tmp_path)
    assert (info.context_window, info.window_source) == (
        8192,
        "Ollama /api/show parameters num_ctx",
    )


def test_an_ollama_model_not_loaded_yet_runs_with_the_window_reported_before(tmp_path, caplog):
    port = free_port()
    with local_server("ollama", loaded_window=16384, port=port) as loaded:
        _info(loaded.base_url, loaded.model, tmp_path)
    # The same server (root and model) started again, the model not loaded yet.
    caplog.clear()
    with (
        _not_loaded(port=port) as fake,
        caplog.at_level(logging.WARNING, logger="mind.providers.factory"),
    ):
        info = _info(fake.base_url, fake.model, tmp_path)
    assert info.context_window == 16384 and "remembered" in info.window_source
    assert not caplog.messages


def test_an_ollama_model_not_loaded_and_never_seen_runs_with_ollamas_default_and_a_warning(
    tmp_path, caplog
):
    with _not_loaded() as fake, caplog.at_level(logging.WARNING, logger="mind.providers.factory"):
        info = _info(fake.base_url, fake.model, tmp_path)
    assert info.context_window == 4096
    (warning,) = caplog.messages
    assert "[[provider.models]]" in warning and "not loaded yet" in warning
