"""Behaviour every adapter shares: cancellation, chunking independence, secret hygiene."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_kit import API_KEY, make_provider
from provider_wire import JSON, Reply, WireServer, cassette_bodies, data_file, split

from mind.providers._adapter import StreamingAdapter
from mind.providers.base import (
    ProviderMessage,
    ProviderRequest,
    ProviderResult,
    StopReason,
    TextDelta,
)

REQUEST = ProviderRequest("system", [ProviderMessage("user", "hello")])
# A stream per adapter, cut after its first text delta, for the cancellation test.
FIRST_TEXT = {
    "openai": ("openai/reasoning_length.sse", b"Autumn"),
    "anthropic": ("anthropic/basic_response.txt", b"Hello"),
    "gemini": ("gemini/thoughts_unterminated.sse", b'"Hello"'),
}
RECORDED = [
    ("openai", data_file("openai/parallel_tool_calls.sse")),
    ("openai", data_file("openai/reasoning_length.sse")),
    ("anthropic", cassette_bodies("anthropic/thinking_cassette.yaml")[0]),
    ("anthropic", data_file("anthropic/redacted_parallel_tools.txt")),
    ("gemini", data_file("gemini/thoughts_unterminated.sse")),
    ("gemini", data_file("gemini/error_after_200.sse")),
    ("gemini", data_file("gemini/cancelled_after_stop.sse")),
]


def _prefix_through_first_text(name: str, marker: bytes) -> bytes:
    data = data_file(name)
    end = data.index(marker)
    separator = b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n"
    return data[: data.index(separator, end) + len(separator)]


@pytest.mark.parametrize("kind", sorted(FIRST_TEXT))
async def test_cancelling_mid_stream_closes_the_connection(wire, kind):
    name, marker = FIRST_TEXT[kind]
    wire.play(Reply(chunks=[_prefix_through_first_text(name, marker)], hold_open=True))
    provider = make_provider(kind, wire)
    first_text = asyncio.Event()

    def on_event(event: object) -> None:
        if isinstance(event, TextDelta):
            first_text.set()

    task = asyncio.create_task(provider.complete(REQUEST, on_event))
    try:
        await asyncio.wait_for(first_text.wait(), timeout=10)
        assert not wire.disconnected.is_set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(wire.disconnected.wait, 10)
    finally:
        await provider.aclose()


def _comparable(result: ProviderResult) -> ProviderResult:
    """The result with generated tool-call ids blanked (they are random by design)."""
    calls = [
        dataclasses.replace(call, id="generated") if call.id.startswith("call_") else call
        for call in result.tool_calls
    ]
    return dataclasses.replace(result, tool_calls=calls)


async def _complete(
    server: WireServer, provider: StreamingAdapter, reply: Reply
) -> tuple[ProviderResult, str]:
    server.play(reply)
    texts: list[str] = []
    result = await provider.complete(
        REQUEST, lambda e: texts.append(e.text) if isinstance(e, TextDelta) else None
    )
    return _comparable(result), "".join(texts)


@pytest.mark.parametrize(
    "case", range(len(RECORDED)), ids=[f"{k}-{i}" for i, (k, _) in enumerate(RECORDED)]
)
def test_splitting_a_recorded_stream_anywhere_never_changes_the_result(case):
    kind, body = RECORDED[case]
    server = WireServer().start()
    loop = asyncio.new_event_loop()
    provider = make_provider(kind, server)
    try:
        whole = loop.run_until_complete(_complete(server, provider, Reply(body=body)))
        assert whole[0].text or whole[0].tool_calls

        @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(st.lists(st.integers(min_value=1, max_value=len(body) - 1), max_size=60))
        def check(cuts: list[int]) -> None:
            pieces = loop.run_until_complete(
                _complete(server, provider, Reply(chunks=split(body, cuts)))
            )
            assert pieces == whole

        check()
    finally:
        loop.run_until_complete(provider.aclose())
        loop.close()
        server.stop()


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
async def test_api_key_never_reaches_errors_logs_or_repr(wire, kind, caplog):
    echo = b'{"error": {"message": "bad key ' + API_KEY.encode() + b'", "type": "x"}}'
    wire.play(Reply(500, echo, dict(JSON)), Reply(403, echo, dict(JSON)))
    provider = make_provider(kind, wire, max_retries=1)
    with caplog.at_level(logging.DEBUG):
        result = await provider.complete(REQUEST, lambda e: None)
    await provider.aclose()

    assert result.error is not None
    assert "bad key" in result.error.message
    assert API_KEY not in result.error.message
    assert API_KEY not in repr(provider)
    assert API_KEY not in repr(result)
    assert len(caplog.records) > 0
    assert all(API_KEY not in record.getMessage() for record in caplog.records)


async def test_unreachable_server_is_an_unavailable_error_after_retries(wire):
    provider = make_provider("openai", wire, max_retries=1)
    wire.stop()
    result = await provider.complete(REQUEST, lambda e: None)
    await provider.aclose()

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind.value == "unavailable"
    assert "cannot reach" in result.error.message


@pytest.mark.parametrize("kind", sorted(FIRST_TEXT))
async def test_a_stream_cut_short_is_an_error_keeping_the_partial_text(wire, kind):
    name, marker = FIRST_TEXT[kind]
    wire.play(Reply(body=_prefix_through_first_text(name, marker)))
    provider = make_provider(kind, wire)
    result = await provider.complete(REQUEST, lambda e: None)
    await provider.aclose()

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind.value == "stream"
    assert "ended before the response was complete" in result.error.message
    assert result.text.startswith(marker.decode().strip('"'))


# Per wire: a stream whose finish reason (`finish_reason`, `message_delta`'s `stop_reason`,
# Gemini's `finishReason: STOP` on every chunk) is followed by an error, the text that came
# before it, and what the error says.
ERROR_AFTER_FINISH = {
    "openai": ("openai/error_after_finish.sse", "Done: here is the time.", "upstream connection"),
    "anthropic": ("anthropic/error_after_message_delta.txt", "Hello there!", "api_error"),
    "gemini": (
        "gemini/cancelled_after_stop.sse",
        "The capital of Mexico is Mexico City.",
        "CANCELLED",
    ),
}


@pytest.mark.parametrize("kind", sorted(ERROR_AFTER_FINISH))
async def test_an_error_after_the_finish_reason_ends_the_result_as_an_error(wire, kind):
    name, text, says = ERROR_AFTER_FINISH[kind]
    wire.play(Reply(body=data_file(name)))
    provider = make_provider(kind, wire)
    result = await provider.complete(REQUEST, lambda e: None)
    await provider.aclose()

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind.value == "stream"
    assert says in result.error.message
    assert result.text == text


# Per wire: a complete recorded answer and the line its end marker starts with.
END_MARKER = {
    "openai": ("openai/e2e_answer.sse", b"data: [DONE]"),
    "anthropic": ("anthropic/basic_response.txt", b"event: message_stop"),
}


@pytest.mark.parametrize("kind", sorted(END_MARKER))
async def test_a_stream_ending_before_its_end_marker_is_an_error_despite_a_finish_reason(
    wire, kind
):
    name, marker = END_MARKER[kind]
    data = data_file(name)
    wire.play(Reply(body=data[: data.index(marker)]))
    provider = make_provider(kind, wire)
    result = await provider.complete(REQUEST, lambda e: None)
    await provider.aclose()

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind.value == "stream"
    assert "ended before the response was complete" in result.error.message
