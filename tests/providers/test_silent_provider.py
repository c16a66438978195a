"""A provider that sends nothing (`provider.first_byte_timeout`): every adapter against a real
local server that accepts the request and stays silent, or stalls in the middle of a stream.

The adapters' HTTP read timeout is 10 s here and the silence limit well under it, so a result
that names the limit came from the silence bound, not from httpx."""

from __future__ import annotations

import asyncio

import pytest
from provider_kit import make_provider
from provider_wire import JSON, Reply, WireServer, data_file

from mind.providers.base import (
    ErrorKind,
    ProviderMessage,
    ProviderRequest,
    StopReason,
    TextDelta,
)

REQUEST = ProviderRequest("system", [ProviderMessage("user", "hello")])
KINDS = ["anthropic", "gemini", "openai"]
# Per wire: a recorded stream and the text of its first text delta.
FIRST_TEXT = {
    "openai": ("openai/reasoning_length.sse", b"Autumn"),
    "anthropic": ("anthropic/basic_response.txt", b"Hello"),
    "gemini": ("gemini/thoughts_unterminated.sse", b'"Hello"'),
}
LIMIT = 0.5


def _events(name: str) -> list[bytes]:
    """The recorded stream's events, each with its separator."""
    data = data_file(name)
    separator = b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n"
    return [event + separator for event in data.split(separator) if event.strip()]


def _through_first_text(name: str, marker: bytes) -> bytes:
    data = data_file(name)
    separator = b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n"
    return data[: data.index(separator, data.index(marker)) + len(separator)]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_provider_that_sends_nothing_ends_the_call_with_an_error_naming_it(
    wire: WireServer, kind: str
) -> None:
    wire.play(Reply(silent=True))
    provider = make_provider(kind, wire, first_byte_timeout=LIMIT, max_retries=3)
    try:
        result = await provider.complete(REQUEST, lambda event: None)
    finally:
        await provider.aclose()
    assert result.stop_reason is StopReason.ERROR and result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
    assert result.error.message == f"{kind} sent nothing for 0.5 s (provider.first_byte_timeout)"
    assert await asyncio.to_thread(wire.disconnected.wait, 10), "the request was left open"
    assert len(wire.requests) == 1, "a silence is not retried: the limit bounds the whole wait"


async def test_the_limit_bounds_retries_and_their_waits_too(wire: WireServer) -> None:
    overloaded = Reply(503, b'{"error": {"message": "overloaded"}}', dict(JSON))
    wire.play(overloaded, Reply(silent=True))
    provider = make_provider("openai", wire, first_byte_timeout=LIMIT, max_retries=3)
    try:
        result = await provider.complete(REQUEST, lambda event: None)
    finally:
        await provider.aclose()
    assert result.error is not None
    assert result.error.message == (
        "openai sent nothing for 0.5 s (provider.first_byte_timeout); "
        "before that: openai is unavailable (HTTP 503: overloaded)"
    )
    assert len(wire.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stream_that_stalls_midway_ends_with_an_error_keeping_the_text_so_far(
    wire: WireServer, kind: str
) -> None:
    name, marker = FIRST_TEXT[kind]
    wire.play(Reply(chunks=[_through_first_text(name, marker)], hold_open=True))
    provider = make_provider(kind, wire, first_byte_timeout=LIMIT)
    deltas: list[str] = []
    try:
        result = await provider.complete(
            REQUEST,
            lambda event: deltas.append(event.text) if isinstance(event, TextDelta) else None,
        )
    finally:
        await provider.aclose()
    assert result.stop_reason is StopReason.ERROR and result.error is not None
    assert result.error.kind is ErrorKind.STREAM
    assert result.error.message == (
        f"{kind} sent nothing for 0.5 s in the middle of its response (provider.first_byte_timeout)"
    )
    assert deltas and result.text == "".join(deltas)
    assert await asyncio.to_thread(wire.disconnected.wait, 10), "the stream was left open"


async def test_a_slow_but_steady_stream_is_never_cut(wire: WireServer) -> None:
    """Each piece arrives well within the limit while the whole stream takes longer than it:
    only silence counts, not the length of the response."""
    events = _events("openai/reasoning_length.sse")
    wire.play(Reply(chunks=events, pause=0.2))
    provider = make_provider("openai", wire, first_byte_timeout=1.0)
    try:
        result = await provider.complete(REQUEST, lambda event: None)
    finally:
        await provider.aclose()
    assert len(events) * 0.2 > 1.0, "the stream must outlast the limit for this test to mean it"
    assert result.error is None, result.error
    assert result.text.startswith("Autumn")
