"""OpenAI-compatible Chat Completions against the local wire server."""

from __future__ import annotations

import logging

from provider_kit import API_KEY
from provider_wire import JSON, Reply, data_file

from mind.providers.base import (
    ErrorKind,
    ImagePart,
    ProviderMessage,
    ProviderRequest,
    StopReason,
    ThinkingBlock,
    ThinkingLevel,
    ToolCall,
    ToolCallDelta,
    ToolDefinition,
    Usage,
)
from mind.providers.vision import IMAGE_UNSUPPORTED
from tobe.config import ModelEntry

WEATHER = ToolDefinition(
    "GetWeatherArgs",
    "Get the temperature for the given country/city combo",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def ask(text: str = "What's the weather like in Edinburgh?", **kwargs: object) -> ProviderRequest:
    return ProviderRequest(
        system="You are terse.",
        messages=[ProviderMessage("user", text)],
        **kwargs,  # type: ignore[arg-type]
    )


async def test_parallel_tool_calls_are_assembled_from_fragments(wire, provider_for, events):
    wire.play(Reply(body=data_file("openai/parallel_tool_calls.sse")))
    provider = provider_for("openai")

    result = await provider.complete(ask(tools=[WEATHER]), events)

    assert result.error is None
    assert result.stop_reason == StopReason.TOOL_USE
    assert result.text == ""
    assert result.tool_calls == [
        ToolCall(
            id="call_g4Q1vRbE0CaHGOs5if8mHsBq",
            name="GetWeatherArgs",
            arguments={"city": "Edinburgh", "country": "UK", "units": "c"},
            raw_arguments='{"city": "Edinburgh", "country": "UK", "units": "c"}',
            provider_id="call_g4Q1vRbE0CaHGOs5if8mHsBq",
        ),
        ToolCall(
            id="call_gWj3HQxZEHnFvyJLEHIiJKBV",
            name="get_stock_price",
            arguments={"ticker": "AAPL", "exchange": "NASDAQ"},
            raw_arguments='{"ticker": "AAPL", "exchange": "NASDAQ"}',
            provider_id="call_gWj3HQxZEHnFvyJLEHIiJKBV",
        ),
    ]
    assert result.usage == Usage(input_tokens=149, output_tokens=60, cached_tokens=0)
    starts = [e for e in events if isinstance(e, ToolCallDelta) and not e.arguments_fragment]
    assert [(e.index, e.name) for e in starts] == [(0, "GetWeatherArgs"), (1, "get_stock_price")]
    fragments = "".join(
        e.arguments_fragment for e in events if isinstance(e, ToolCallDelta) and e.index == 1
    )
    assert fragments == '{"ticker": "AAPL", "exchange": "NASDAQ"}'


async def test_request_carries_system_tools_usage_option_and_bearer_key(wire, provider_for):
    wire.play(Reply(body=data_file("openai/parallel_tool_calls.sse")))
    await provider_for("openai").complete(ask(tools=[WEATHER]), lambda e: None)

    (request,) = wire.requests
    assert request.path == "/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body = request.json()
    assert body["model"] == "gpt-4o"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert body["messages"][1] == {
        "role": "user",
        "content": "What's the weather like in Edinburgh?",
    }
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": WEATHER.name,
                "description": WEATHER.description,
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert "reasoning_effort" not in body
    assert body["max_tokens"] == 16_384


async def test_reasoning_text_length_stop_and_cached_usage(wire, provider_for, events):
    wire.play(Reply(body=data_file("openai/reasoning_length.sse")))
    result = await provider_for("openai").complete(ask("haiku"), events)

    assert result.stop_reason == StopReason.LENGTH
    assert result.error is None
    assert result.text == "Autumn moonlight—\na worm digs"
    assert result.thinking == [ThinkingBlock(text="The user wants a haiku.")]
    assert result.usage == Usage(input_tokens=31, output_tokens=12, cached_tokens=16)


async def test_error_object_in_the_stream_ends_the_run_with_a_stream_error(wire, provider_for):
    wire.play(Reply(body=data_file("openai/midstream_error.sse")))
    result = await provider_for("openai").complete(ask(), lambda e: None)

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind == ErrorKind.STREAM
    assert "upstream model crashed" in result.error.message
    assert result.text == "Partial"


async def test_rejected_key_is_a_configuration_error_naming_the_setting(wire, provider_for):
    wire.play(Reply(401, data_file("openai/invalid_key.json"), dict(JSON)))
    result = await provider_for("openai").complete(ask(), lambda e: None)

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind == ErrorKind.CONFIGURATION
    assert result.error.status == 401
    assert "openai" in result.error.message
    assert "TOBE_PROVIDER__API_KEY" in result.error.message
    assert "OPENAI_API_KEY" in result.error.message
    assert API_KEY not in result.error.message
    assert len(wire.requests) == 1


async def test_rate_limit_waits_for_retry_after_then_succeeds(wire, provider_for, caplog):
    wire.play(
        Reply(429, b'{"error": {"message": "Rate limit reached"}}', {**JSON, "retry-after": "1"}),
        Reply(body=data_file("openai/reasoning_length.sse")),
    )
    with caplog.at_level(logging.WARNING, logger="mind.providers"):
        result = await provider_for("openai").complete(ask(), lambda e: None)

    assert result.error is None
    assert result.text == "Autumn moonlight—\na worm digs"
    assert len(wire.requests) == 2
    assert any("retry 1/2 in 1.00s" in r.getMessage() for r in caplog.records)


async def test_server_errors_are_retried_a_bounded_number_of_times(wire, provider_for):
    failure = Reply(500, b'{"error": {"message": "boom"}}', dict(JSON))
    wire.play(failure, failure, failure, failure)
    result = await provider_for("openai", max_retries=2).complete(ask(), lambda e: None)

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind == ErrorKind.UNAVAILABLE
    assert result.error.status == 500
    assert len(wire.requests) == 3


async def test_tool_results_go_back_as_tool_messages_with_their_call_ids(wire, provider_for):
    wire.play(Reply(body=data_file("openai/reasoning_length.sse")))
    history = [
        ProviderMessage("user", "Weather in Edinburgh and AAPL?"),
        ProviderMessage(
            "assistant",
            "",
            tool_calls=[
                ToolCall("call_a", "GetWeatherArgs", {"city": "Edinburgh"}, '{"city":"Edinburgh"}'),
                ToolCall("call_b", "get_stock_price", None, "{oops", "not JSON"),
            ],
        ),
        ProviderMessage("tool", "12°C", tool_call_id="call_a", tool_name="GetWeatherArgs"),
        ProviderMessage(
            "tool",
            "arguments were not JSON",
            tool_call_id="call_b",
            tool_name="get_stock_price",
            is_error=True,
        ),
    ]
    await provider_for("openai").complete(ProviderRequest("", history), lambda e: None)

    messages = wire.requests[0].json()["messages"]
    assert messages[1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "GetWeatherArgs", "arguments": '{"city":"Edinburgh"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_stock_price", "arguments": "{oops"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "12°C"},
        {"role": "tool", "tool_call_id": "call_b", "content": "arguments were not JSON"},
    ]
    assert messages[0] == {"role": "user", "content": "Weather in Edinburgh and AAPL?"}


async def test_images_go_as_data_urls_or_as_placeholders_for_blind_models(wire, provider_for):
    image = ImagePart("image/jpeg", "/9j/4AAQSkZJRg==")
    request = ProviderRequest("", [ProviderMessage("user", "what is this?", images=[image])])
    blind = ModelEntry(id="llama3.1", context_window=8192, max_output=2048)
    wire.play(
        Reply(body=data_file("openai/reasoning_length.sse")),
        Reply(body=data_file("openai/reasoning_length.sse")),
    )

    await provider_for("openai").complete(request, lambda e: None)
    await provider_for("openai", model="llama3.1", models=[blind]).complete(request, lambda e: None)

    seeing, blind_request = (r.json()["messages"][0] for r in wire.requests)
    assert seeing["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
    ]
    assert blind_request == {"role": "user", "content": f"what is this?\n{IMAGE_UNSUPPORTED}"}


async def test_thinking_level_becomes_reasoning_effort_clamped_to_the_model(wire, provider_for):
    wire.play(
        Reply(body=data_file("openai/reasoning_length.sse")),
        Reply(body=data_file("openai/reasoning_length.sse")),
    )
    await provider_for("openai", model="o4-mini").complete(
        ask(thinking=ThinkingLevel.MEDIUM), lambda e: None
    )
    await provider_for("openai", model="o4-mini").complete(
        ask(thinking=ThinkingLevel.OFF), lambda e: None
    )

    first, second = (r.json() for r in wire.requests)
    assert first["reasoning_effort"] == "medium"
    assert first["max_completion_tokens"] == 100_000
    assert "max_tokens" not in first
    assert second["reasoning_effort"] == "low"
