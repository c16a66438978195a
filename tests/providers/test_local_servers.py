"""The fake local model servers speak each server's API, and the Mind's adapter reads them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
from helpers.local_servers import LocalServer, local_server
from helpers.ports import free_port
from pydantic import SecretStr

from mind.providers.base import ErrorKind, ProviderMessage, ProviderRequest, StopReason
from mind.providers.catalog import lookup
from mind.providers.openai import OpenAIProvider
from tobe.config import ModelEntry, ProviderSettings
from tobe.runtime.backoff import Backoff

KINDS = ["llama-server", "ollama", "vllm", "lmstudio"]
ROOT = Path(__file__).resolve().parents[2]
BEG_FOR_JSON = 'Answer ONLY with a JSON object {"action": string}. No prose.'
SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["none", "remind"]},
        "items": {"type": "array", "items": {"type": "string"}},
        "confidence": {"type": "number"},
        "note": {"type": ["string", "null"]},
    },
    "required": ["action", "items", "confidence", "note"],
    "additionalProperties": False,
}


@pytest.fixture(params=KINDS)
def server(request: pytest.FixtureRequest) -> AsyncIterator[LocalServer]:
    with local_server(request.param, loaded_window=1024) as fake:
        yield fake


@pytest.fixture
async def adapter_for() -> AsyncIterator[Callable[[LocalServer], OpenAIProvider]]:
    made: list[OpenAIProvider] = []

    def build(fake: LocalServer) -> OpenAIProvider:
        settings = ProviderSettings(
            kind="openai",
            base_url=fake.base_url,
            model=fake.model,
            api_key=SecretStr(""),
            max_retries=0,
            timeout=10,
            # The Mind's side of asking the server for its window is not the fakes' concern.
            models=[ModelEntry(id=fake.model, context_window=fake.loaded_window, max_output=64)],
        )
        provider = OpenAIProvider(
            settings,
            lookup(settings),
            backoff_factory=lambda: Backoff(initial=0.01, maximum=0.02, jitter=0.0),
        )
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.aclose()


def ask(text: str, system: str = "You are terse.") -> ProviderRequest:
    return ProviderRequest(system=system, messages=[ProviderMessage("user", text)])


def post_chat(fake: LocalServer, **body: object) -> httpx.Response:
    body.setdefault("model", fake.model)
    return httpx.post(f"{fake.base_url}/chat/completions", json=body, timeout=10)


def get(fake: LocalServer, path: str) -> httpx.Response:
    return httpx.get(fake.base_url.removesuffix("/v1") + path, timeout=10)


def test_llama_server_reports_the_loaded_window_in_props_and_the_training_one_in_models():
    with local_server("llama-server", loaded_window=4096, max_window=32768) as fake:
        props = get(fake, "/props").json()
        (listed,) = get(fake, "/v1/models").json()["data"]
        health = get(fake, "/health").json()

    assert props["default_generation_settings"]["n_ctx"] == 4096
    assert listed["id"] == fake.model
    assert listed["meta"]["n_ctx_train"] == 32768
    assert health == {"status": "ok"}
    assert fake.gets == ["/props", "/v1/models", "/health"]


def test_ollama_reports_the_maximum_in_show_and_the_loaded_window_in_ps():
    with local_server("ollama", model="qwen2.5", loaded_window=4096, max_window=32768) as fake:
        show = httpx.post(
            fake.base_url.removesuffix("/v1") + "/api/show", json={"model": "qwen2.5"}
        )
        (loaded,) = get(fake, "/api/ps").json()["models"]
        (tagged,) = get(fake, "/api/tags").json()["models"]
        listed = get(fake, "/v1/models").json()["data"]
        version = get(fake, "/api/version").json()
        missing = httpx.post(fake.base_url.removesuffix("/v1") + "/api/show", json={"model": "x"})

    info = show.json()["model_info"]
    assert fake.model == "qwen2.5:latest"
    assert info[f"{info['general.architecture']}.context_length"] == 32768
    assert loaded["context_length"] == 4096
    assert tagged["name"] == listed[0]["id"] == "qwen2.5:latest"
    assert "version" in version
    assert (missing.status_code, missing.json()) == (404, {"error": "model 'x' not found"})


def test_vllm_reports_the_served_window_as_max_model_len():
    with local_server("vllm", loaded_window=8192, max_window=131072) as fake:
        (listed,) = get(fake, "/v1/models").json()["data"]

    assert (listed["id"], listed["owned_by"], listed["max_model_len"]) == (fake.model, "vllm", 8192)


def test_lm_studio_reports_loaded_and_maximum_context_lengths():
    with local_server("lmstudio", loaded_window=4096, max_window=32768) as fake:
        (native,) = get(fake, "/api/v0/models").json()["data"]
        (listed,) = get(fake, "/v1/models").json()["data"]

    assert native["state"] == "loaded"
    assert (native["loaded_context_length"], native["max_context_length"]) == (4096, 32768)
    assert native["type"] == "llm" and native["arch"] and native["quantization"]
    assert listed["id"] == native["id"] == fake.model


async def test_a_streamed_turn_gives_the_adapter_text_and_usage(server, adapter_for):
    result = await adapter_for(server).complete(ask("Hello there"), lambda event: None)

    assert result.error is None
    assert len(result.text) == 4 * 64  # max_output of the configured entry
    (record,) = server.chats
    assert record.body["stream"] is True
    assert record.body["stream_options"] == {"include_usage": True}
    assert result.usage.input_tokens == record.prompt_tokens > 0
    assert result.usage.output_tokens == record.max_tokens == 64
    assert result.stop_reason == StopReason.LENGTH
    assert not record.over_window and record.structured is None and not record.answered_json


@pytest.mark.parametrize("kind", ["llama-server", "vllm", "lmstudio"])
async def test_a_prompt_over_the_window_is_a_context_overflow_for_the_adapter(kind, adapter_for):
    with local_server(kind, loaded_window=256) as fake:
        result = await adapter_for(fake).complete(ask("x" * 4000), lambda event: None)

    (record,) = fake.chats
    assert record.over_window
    assert result.error is not None
    assert result.error.kind == ErrorKind.CONTEXT_OVERFLOW


def test_each_refusing_server_answers_an_over_window_prompt_in_its_own_shape():
    long = [{"role": "user", "content": "x" * 4000}]
    with local_server("llama-server", loaded_window=256) as fake:
        llama = post_chat(fake, messages=long)
    with local_server("vllm", loaded_window=256) as fake:
        vllm = post_chat(fake, messages=long, max_tokens=100)
    with local_server("lmstudio", loaded_window=256) as fake:
        studio = post_chat(fake, messages=long, stream=True)

    assert llama.status_code == 400
    error = llama.json()["error"]
    assert error["type"] == "exceed_context_size_error"
    assert (error["n_prompt_tokens"], error["n_ctx"]) == (1007, 256)
    assert vllm.status_code == 400
    error = vllm.json()["error"]
    assert error["type"] == "BadRequestError"
    assert error["message"].startswith(
        "This model's maximum context length is 256 tokens. However, you requested 100 "
        "output tokens and your prompt contains 1007 input tokens, for a total of 1107 tokens."
    )
    assert studio.status_code == 200
    event, data = studio.text.strip().split("\n")
    assert event == "event: error"
    assert json.loads(data.removeprefix("data: "))["error"]["message"] == (
        "Input does not fit in context length. The input has 1007 tokens, but the context "
        "length only supports 256 tokens."
    )


def test_vllm_counts_the_requested_output_against_the_window_and_llama_server_does_not():
    fits_alone = [{"role": "user", "content": "x" * 600}]  # 157 tokens of a 256 window
    with local_server("vllm", loaded_window=256) as fake:
        vllm = post_chat(fake, messages=fits_alone, max_tokens=200)
    with local_server("llama-server", loaded_window=256) as fake:
        llama = post_chat(fake, messages=fits_alone, max_tokens=200)

    assert vllm.status_code == 400
    assert llama.status_code == 200
    (choice,) = llama.json()["choices"]
    assert choice["finish_reason"] == "length"
    assert llama.json()["usage"]["completion_tokens"] == 256 - 157


async def test_ollama_truncates_an_over_window_prompt_silently_and_records_it(adapter_for):
    with local_server("ollama", loaded_window=256) as fake:
        old = [ProviderMessage("user", "y" * 1600), ProviderMessage("assistant", "ok")]
        request = ProviderRequest(
            system="Be brief.", messages=[*old, ProviderMessage("user", "hi")]
        )
        result = await adapter_for(fake).complete(request, lambda event: None)

    (record,) = fake.chats
    assert result.error is None and result.text
    assert record.over_window and record.prompt_tokens > 256
    assert result.usage.input_tokens <= 256


def test_ollama_ignores_options_num_ctx_over_v1():
    long = [{"role": "user", "content": "x" * 4000}]
    with local_server("ollama", loaded_window=256) as fake:
        response = post_chat(fake, messages=long, options={"num_ctx": 8192})

    assert response.status_code == 200
    assert response.json()["usage"]["prompt_tokens"] <= 256
    assert fake.chats[0].over_window


def test_ollama_serves_a_name_without_its_tag_and_refuses_an_unknown_one():
    with local_server("ollama", model="qwen2.5") as fake:
        untagged = post_chat(fake, model="qwen2.5", messages=[{"role": "user", "content": "hi"}])
        unknown = post_chat(fake, model="llama3", messages=[{"role": "user", "content": "hi"}])

    assert untagged.status_code == 200
    assert untagged.json()["model"] == "qwen2.5:latest"
    assert unknown.status_code == 404
    assert unknown.json()["error"]["type"] == "not_found_error"


def test_unknown_models_get_each_servers_answer():
    hello = [{"role": "user", "content": "hi"}]
    with local_server("vllm") as fake:
        vllm = post_chat(fake, model="nope", messages=hello)
    with local_server("llama-server") as fake:
        llama = post_chat(fake, model="nope", messages=hello)

    assert vllm.status_code == 404
    assert vllm.json()["error"]["message"] == "The model `nope` does not exist."
    assert llama.status_code == 200  # one model per llama-server: the name is not checked


def test_a_model_begged_for_json_in_the_prompt_still_answers_prose(server):
    messages = [{"role": "system", "content": BEG_FOR_JSON}, {"role": "user", "content": "hi"}]
    response = post_chat(server, messages=messages)

    assert response.status_code == 200
    (record,) = server.chats
    assert record.structured is None and not record.answered_json
    assert not response.json()["choices"][0]["message"]["content"].lstrip().startswith("{")


def test_structured_output_asked_with_a_json_schema_answers_valid_json(server):
    response_format = {"type": "json_schema", "json_schema": {"name": "decision", "schema": SCHEMA}}
    response = post_chat(
        server, messages=[{"role": "user", "content": "hi"}], response_format=response_format
    )

    answer = json.loads(response.json()["choices"][0]["message"]["content"])
    assert answer == {"action": "none", "items": [], "confidence": 0, "note": ""}
    (record,) = server.chats
    assert (record.structured, record.answered_json) == ("json_schema", True)


@pytest.mark.parametrize("kind", ["llama-server", "ollama", "vllm"])
def test_json_object_mode_answers_a_json_object(kind):
    with local_server(kind) as fake:
        response = post_chat(
            fake,
            messages=[{"role": "user", "content": "hi"}],
            response_format={"type": "json_object"},
        )

    assert json.loads(response.json()["choices"][0]["message"]["content"]) == {}
    assert fake.chats[0].structured == "json_object"


def test_lm_studio_refuses_json_object_mode():
    with local_server("lmstudio") as fake:
        response = post_chat(
            fake,
            messages=[{"role": "user", "content": "hi"}],
            response_format={"type": "json_object"},
        )

    assert response.status_code == 400
    assert response.json() == {"error": "'response_format.type' must be 'json_schema' or 'text'"}


def test_server_specific_schema_fields_are_honoured():
    hello = [{"role": "user", "content": "hi"}]
    with local_server("llama-server") as fake:
        llama = post_chat(fake, messages=hello, json_schema=SCHEMA)
    with local_server("vllm") as fake:
        guided = post_chat(fake, messages=hello, guided_json=SCHEMA)
    with local_server("ollama") as fake:
        ignored = post_chat(fake, messages=hello, guided_json=SCHEMA)

    for response in (llama, guided):
        assert json.loads(response.json()["choices"][0]["message"]["content"])["action"] == "none"
    assert not ignored.json()["choices"][0]["message"]["content"].startswith("{")


async def test_max_tokens_ends_the_reply_with_length(server, adapter_for):
    response = post_chat(server, messages=[{"role": "user", "content": "hi"}], max_tokens=10)

    (choice,) = response.json()["choices"]
    assert choice["finish_reason"] == "length"
    assert response.json()["usage"]["completion_tokens"] == 10
    assert len(choice["message"]["content"]) == 40


def test_runs_as_a_process_printing_its_base_url():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.local_servers", "vllm", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        listed = httpx.get(f"{base_url}/models", timeout=10).json()
    finally:
        process.terminate()
        process.wait(timeout=10)

    assert base_url == f"http://127.0.0.1:{port}/v1"
    assert listed["data"][0]["max_model_len"] == 4096
