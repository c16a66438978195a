"""Find the model servers running on this machine, for `tobe setup` and `tobe models`.

llama.cpp's `llama-server`, Ollama, vLLM and LM Studio each listen on their own usual port
(8080, 11434, 8000, 1234) and speak the OpenAI-compatible API under `/v1`; each port is asked
for its model listing at once, with a short timeout, and whatever answers is named by what it
says about itself (`mind.providers.server_facts`), with the window each model is served with.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mind.providers.listing import ListedModel, ListingError, list_models
from mind.providers.server_facts import ServerFacts, ask_server
from tobe.config import ProviderSettings

# The usual port of each server, in the order they are offered.
USUAL_PORTS = (8080, 11434, 8000, 1234)
SERVER_NAMES = {
    "llama-server": "llama-server",
    "ollama": "Ollama",
    "vllm": "vLLM",
    "lmstudio": "LM Studio",
    "": "an OpenAI-compatible server",
}
ASK_TIMEOUT = 1.5


@dataclass(frozen=True)
class ServedModel:
    id: str
    facts: ServerFacts

    @property
    def window(self) -> int | None:
        """The window the server reported for this model (None: a default, or not said)."""
        if self.facts.default_window:
            return None
        return self.facts.context_window


@dataclass(frozen=True)
class LocalServer:
    base_url: str
    server: str
    models: tuple[ServedModel, ...]

    @property
    def name(self) -> str:
        return SERVER_NAMES.get(self.server, SERVER_NAMES[""])


def settings_for(base_url: str) -> ProviderSettings:
    return ProviderSettings(kind="openai", base_url=base_url)


def find_local_servers(ports: tuple[int, ...] = USUAL_PORTS) -> list[LocalServer]:
    """The servers answering on `ports` of 127.0.0.1, in the order of `ports`."""
    return asyncio.run(_find(ports))


async def _find(ports: tuple[int, ...]) -> list[LocalServer]:
    found = await asyncio.gather(*(_server(f"http://127.0.0.1:{port}/v1") for port in ports))
    return [server for server in found if server is not None]


async def _server(base_url: str) -> LocalServer | None:
    settings = settings_for(base_url)
    try:
        listed = await list_models(settings, timeout=ASK_TIMEOUT)
    except ListingError:
        return None
    models = await served_models(settings, listed)
    kinds = {model.facts.server for model in models}
    return LocalServer(base_url, kinds.pop() if len(kinds) == 1 else "", tuple(models))


async def served_models(settings: ProviderSettings, listed: list[ListedModel]) -> list[ServedModel]:
    """What the server says about each model it lists."""
    facts = await asyncio.gather(
        *(ask_server(settings, model.id, model, timeout=ASK_TIMEOUT) for model in listed)
    )
    return [ServedModel(model.id, fact) for model, fact in zip(listed, facts, strict=True)]


def served(settings: ProviderSettings, listed: list[ListedModel]) -> dict[str, ServedModel]:
    """`served_models` by model id, outside an event loop."""
    return {model.id: model for model in asyncio.run(served_models(settings, listed))}
