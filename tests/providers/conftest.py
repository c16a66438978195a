from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from provider_kit import Events, make_provider
from provider_wire import WireServer

from mind.providers._adapter import StreamingAdapter


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
async def provider_for(wire: WireServer) -> AsyncIterator[Callable[..., StreamingAdapter]]:
    made: list[StreamingAdapter] = []

    def build(kind: str, **kwargs: object) -> StreamingAdapter:
        provider = make_provider(kind, wire, **kwargs)  # type: ignore[arg-type]
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.aclose()
