"""`list_models` against local HTTP servers speaking each API's listing, paging included."""

from __future__ import annotations

import asyncio
import socket

import pytest
from model_server import ModelServer, openai_pages
from pydantic import SecretStr

from mind.providers.listing import KeyRejected, ListedModel, ProviderUnreachable, list_models
from tobe.config import ProviderSettings

KEY = "sk-listing-test-9f3a"


def _list(kind: str, url: str, key: str | None = KEY) -> list[ListedModel]:
    settings = ProviderSettings(
        kind=kind,  # type: ignore[arg-type]
        base_url=url,
        api_key=SecretStr(key) if key else None,
    )
    return asyncio.run(list_models(settings, timeout=5.0))


def test_an_openai_compatible_server_lists_its_ids_sorted_with_vllm_windows():
    pages = openai_pages("zephyr", "alpha")
    pages["/v1/models"][""]["data"].append({"id": "served", "max_model_len": 32768})
    with ModelServer(pages, key=KEY) as server:
        listed = _list("openai", server.url + "/v1")
    assert listed == [
        ListedModel("alpha"),
        ListedModel("served", context_window=32768),
        ListedModel("zephyr"),
    ]


def test_an_ollama_server_is_listed_without_a_key_at_its_v1_path():
    with ModelServer(openai_pages("llama3.2:3b", "qwen2.5:7b")) as server:
        listed = _list("openai", server.url + "/v1/", key=None)
        assert server.gets == [("/v1/models", {})]
    assert [model.id for model in listed] == ["llama3.2:3b", "qwen2.5:7b"]


def test_anthropic_listing_follows_has_more_and_last_id():
    pages = {
        "/v1/models": {
            "": {"data": [{"id": "claude-b"}], "has_more": True, "last_id": "claude-b"},
            "claude-b": {"data": [{"id": "claude-a"}], "has_more": False, "last_id": "claude-a"},
        }
    }
    with ModelServer(pages, key=KEY) as server:
        listed = _list("anthropic", server.url)
        assert [query.get("after_id") for _path, query in server.gets] == [None, "claude-b"]
    assert [model.id for model in listed] == ["claude-a", "claude-b"]


def test_gemini_listing_follows_next_page_token_and_keeps_the_limits():
    first = {
        "models": [
            {
                "name": "models/gemini-x",
                "inputTokenLimit": 1048576,
                "outputTokenLimit": 65536,
                "supportedGenerationMethods": ["generateContent"],
            },
            {"name": "models/embedder", "supportedGenerationMethods": ["embedContent"]},
        ],
        "nextPageToken": "page-2",
    }
    second = {"models": [{"name": "models/gemini-a"}]}
    with ModelServer({"/v1beta/models": {"": first, "page-2": second}}, key=KEY) as server:
        listed = _list("gemini", server.url)
    assert listed == [
        ListedModel("gemini-a"),
        ListedModel("gemini-x", context_window=1048576, max_output=65536),
    ]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_a_rejected_key_is_key_rejected_with_the_fix(kind):
    with ModelServer(openai_pages("m"), key=KEY) as server:
        with pytest.raises(KeyRejected, match="HTTP 401.*tobe setup") as caught:
            _list(kind, server.url + ("/v1" if kind == "openai" else ""), key="sk-wrong")
    assert "sk-wrong" not in str(caught.value)


def test_a_closed_port_is_provider_unreachable_naming_the_setting():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ProviderUnreachable, match="TOBE_PROVIDER__BASE_URL"):
        _list("openai", f"http://127.0.0.1:{port}/v1")
