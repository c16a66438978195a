"""Building adapters aimed at a local wire server, for the provider tests and the bench."""

from __future__ import annotations

from provider_wire import WireServer
from pydantic import SecretStr

from mind.providers._adapter import StreamingAdapter
from mind.providers.anthropic import AnthropicProvider
from mind.providers.base import StreamEvent
from mind.providers.catalog import lookup
from mind.providers.gemini import GeminiProvider
from mind.providers.openai import OpenAIProvider
from tobe.config import ModelEntry, ProviderSettings
from tobe.runtime.backoff import Backoff

API_KEY = "sk-test-0123456789abcdefSECRET"
ADAPTERS: dict[str, type[StreamingAdapter]] = {
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
}
MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash"}


def fast_backoff() -> Backoff:
    return Backoff(initial=0.01, maximum=0.02, jitter=0.0)


def make_provider(
    kind: str,
    server: WireServer,
    *,
    model: str | None = None,
    max_retries: int = 2,
    models: list[ModelEntry] | None = None,
    first_byte_timeout: float = 30.0,
) -> StreamingAdapter:
    settings = ProviderSettings(
        kind=kind,  # type: ignore[arg-type]
        base_url=server.url,
        model=model or MODELS[kind],
        api_key=SecretStr(API_KEY),
        max_retries=max_retries,
        timeout=10,
        first_byte_timeout=first_byte_timeout,
        models=models or [],
    )
    return ADAPTERS[kind](settings, lookup(settings), backoff_factory=fast_backoff)


class Events(list[StreamEvent]):
    """An event sink that keeps what it was given."""

    def __call__(self, event: StreamEvent) -> None:
        self.append(event)
