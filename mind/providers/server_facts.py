"""Ask a self-hosted OpenAI-compatible server what it serves: which server it is, the context
window the model is loaded with, and whether it can constrain output to a JSON Schema.

The loaded window is the limit, never the model's maximum: a server truncates or refuses what
does not fit the context it allocated. Wire facts, one server at a time, each tried with one
cheap request on the server's root (the base URL without its `/v1`):

- LM Studio: `GET /api/v0/models` lists each model with `state` ("loaded" or "not-loaded"),
  `max_context_length` and, once loaded, `loaded_context_length`.
- llama.cpp's `llama-server`: `GET /props` has `default_generation_settings.n_ctx`, the context
  of one slot (the `-c` given, divided among `--parallel` slots); `/v1/models` reports
  `meta.n_ctx_train`, the training context, which is not the limit.
- Ollama: `GET /api/version` answers; `GET /api/ps` lists the loaded models with the
  `context_length` each was loaded with; `POST /api/show` gives `model_info`'s
  `<architecture>.context_length` (the maximum) and the Modelfile's `parameters` (`num_ctx`,
  when set). A model not loaded yet is loaded with the Modelfile's `num_ctx`, else the
  server's default (`OLLAMA_CONTEXT_LENGTH`; 4096 on machines under 24 GiB of VRAM), and a
  longer prompt is truncated silently. A name without a tag means `:latest`.
- vLLM: `/v1/models` items carry `max_model_len`, the length it serves.

All four accept `response_format` with a JSON Schema (`json_schema`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from mind.providers.listing import ListedModel, base_url
from tobe.api_keys import api_key
from tobe.config import ProviderSettings

# What a model not loaded yet gets from Ollama with no `num_ctx` in its Modelfile, on machines
# under 24 GiB of VRAM (Ollama's documentation, "Context length").
OLLAMA_DEFAULT_CONTEXT = 4096
# What LM Studio loads a model with on its first request when nothing set another length.
LMSTUDIO_DEFAULT_CONTEXT = 4096
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class ServerFacts:
    """What a self-hosted server said about one model."""

    # "llama-server", "ollama", "vllm", "lmstudio"; "" when the server is none of them.
    server: str
    # The id the server knows the model by (an Ollama name with its tag).
    model: str
    # The context the model is (or will be) served with: the limit; None when not said.
    context_window: int | None = None
    # The model's own maximum, for the operator's information.
    max_context: int | None = None
    # Where the window came from, for the start-up log and `tobe doctor`.
    source: str = ""
    # Whether `context_window` is the server's default for a model not loaded yet (Ollama),
    # rather than what it reported for this model.
    default_window: bool = False
    structured_output: str = "none"


def server_root(settings: ProviderSettings) -> str:
    """The server's root: the base URL without its OpenAI-compatible `/v1`."""
    return base_url(settings).removesuffix("/v1")


def ollama_name(model: str) -> str:
    """The name Ollama resolves `model` to: without a tag it means `:latest`."""
    last = model.rsplit("/", 1)[-1]
    return model if ":" in last else f"{model}:latest"


async def ask_server(
    settings: ProviderSettings,
    model: str,
    listed: ListedModel | None,
    *,
    timeout: float = 5.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> ServerFacts:
    """What the server at `settings`' base URL says about `model`.

    `listed` is the model as `/v1/models` lists it, when the caller has it. Never raises for a
    server that is none of the four: the facts are then empty."""
    key = api_key(settings)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    root = server_root(settings)
    async with httpx.AsyncClient(timeout=timeout, transport=transport, headers=headers) as client:
        lmstudio = await _get(client, f"{root}/api/v0/models")
        if isinstance(lmstudio, dict) and isinstance(lmstudio.get("data"), list):
            return _lmstudio(model, lmstudio["data"])
        props = await _get(client, f"{root}/props")
        if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
            return _llama_server(model, props)
        version = await _get(client, f"{root}/api/version")
        if isinstance(version, dict) and "version" in version:
            return await _ollama(client, root, model)
    if listed is not None and listed.owned_by == "vllm" and listed.context_window:
        window = listed.context_window
        source = "vLLM /v1/models max_model_len"
        return ServerFacts("vllm", model, window, window, source, False, "json_schema")
    return ServerFacts("", model)


def _lmstudio(model: str, items: list[Any]) -> ServerFacts:
    item = next((i for i in items if isinstance(i, dict) and i.get("id") == model), None)
    if item is None:
        return ServerFacts("lmstudio", model, structured_output="json_schema")
    maximum = _positive(item.get("max_context_length"))
    loaded = _positive(item.get("loaded_context_length"))
    if item.get("state") == "loaded" and loaded:
        source = "LM Studio /api/v0/models loaded_context_length"
        return ServerFacts("lmstudio", model, loaded, maximum, source, False, "json_schema")
    # Not loaded: LM Studio loads it on the first request with its default context, which the
    # listing does not say; the maximum is what it may reach, not what it will get.
    window = min(maximum or LMSTUDIO_DEFAULT_CONTEXT, LMSTUDIO_DEFAULT_CONTEXT)
    source = "LM Studio's default context for a model not loaded yet"
    return ServerFacts("lmstudio", model, window, maximum, source, True, "json_schema")


def _llama_server(model: str, props: dict[str, Any]) -> ServerFacts:
    window = _positive(props["default_generation_settings"].get("n_ctx"))
    source = "llama-server /props default_generation_settings.n_ctx"
    return ServerFacts("llama-server", model, window, None, source, False, "json_schema")


async def _ollama(client: httpx.AsyncClient, root: str, model: str) -> ServerFacts:
    name = ollama_name(model)
    maximum = None
    shown = await _post(client, f"{root}/api/show", {"model": name})
    configured = None
    if isinstance(shown, dict):
        info = shown.get("model_info")
        if isinstance(info, dict):
            arch = info.get("general.architecture")
            maximum = _positive(info.get(f"{arch}.context_length"))
        parameters = shown.get("parameters")
        if isinstance(parameters, str):
            found = _NUM_CTX.search(parameters)
            configured = _positive(found.group(1)) if found else None
    running = await _get(client, f"{root}/api/ps")
    for item in (running or {}).get("models") or [] if isinstance(running, dict) else []:
        if isinstance(item, dict) and name in (item.get("name"), item.get("model")):
            loaded = _positive(item.get("context_length"))
            if loaded:
                source = "Ollama /api/ps context_length (loaded)"
                return ServerFacts("ollama", name, loaded, maximum, source, False, "json_schema")
    if configured:
        source = "Ollama /api/show parameters num_ctx"
        return ServerFacts("ollama", name, configured, maximum, source, False, "json_schema")
    source = "Ollama's default context for a model not loaded yet"
    return ServerFacts("ollama", name, OLLAMA_DEFAULT_CONTEXT, maximum, source, True, "json_schema")


async def _get(client: httpx.AsyncClient, url: str) -> Any:
    try:
        response = await client.get(url)
    except httpx.HTTPError:
        return None
    return _json(response)


async def _post(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Any:
    try:
        response = await client.post(url, json=body)
    except httpx.HTTPError:
        return None
    return _json(response)


def _json(response: httpx.Response) -> Any:
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _positive(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None
