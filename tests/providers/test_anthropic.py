"""Anthropic Messages against the local wire server."""

from __future__ import annotations

import logging

from provider_kit import API_KEY
from provider_wire import JSON, Reply, cassette_bodies, data_file

from mind.providers.base import (
    ErrorKind,
    ImagePart,
    ProviderMessage,
    ProviderRequest,
    StopReason,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ThinkingLevel,
    ToolCall,
    ToolDefinition,
    Usage,
)
from mind.providers.vision import IMAGE_UNSUPPORTED
from tobe.config import ModelEntry

SIGNATURE = (
    "EuYBCkQYAiJAZFFuoMD/kqVzMZ887Sa1rJBpa5UU5W+YVHe0PV1dh0T1ZHHOQcSUTMB9iPC6hhduyszf501Ao1McU4sUwl"
    "L2UhIM0nyNDklwN6dy0bkUGgx7Ny7JpGHlGJ3+mR8iMHcNBzvnVJwp6XmCs9jieB8BWgth2vmVOuSU+mUYw2bT4pkzVk"
    "VsxFnA1lh2T1kjRSpQltDXxi/Pyq3WdD/W4gnV9HIJ4Cb5olNXUrMvKUyoim0MfvyOU7wuyAi7J74CVw0Te6DW8GQf3/1j"
    "VYxeMEEBszuSU5IuyxB0BKWW5TfALM0="
)
THINKING_TEXT = (
    "The person is asking for two names for a pet pelican, and they want me to be brief in my "
    "response. I'll provide two concise, creative names that would suit a pelican:\n\n1. "
    "Something that relates to their large beak/pouch\n2. Something that relates to "
    "water/fishing\n\nI'll keep my response very short as requested."
)
WEATHER = ToolDefinition(
    "get_weather", "Current weather", {"type": "object", "properties": {"location": {}}}
)


def ask(text: str = "Hi", **kwargs: object) -> ProviderRequest:
    return ProviderRequest(system="Be brief.", messages=[ProviderMessage("user", text)], **kwargs)  # type: ignore[arg-type]


async def test_plain_text_with_usage_and_required_headers(wire, provider_for, events):
    wire.play(Reply(body=data_file("anthropic/basic_response.txt")))
    result = await provider_for("anthropic").complete(ask(), events)

    assert result.error is None
    assert result.stop_reason == StopReason.STOP
    assert result.text == "Hello there!"
    assert result.usage == Usage(input_tokens=11, output_tokens=6, cached_tokens=0)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", " there", "!"]
    (request,) = wire.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == API_KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.json()
    assert body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert body["max_tokens"] == 64_000
    assert body["stream"] is True
    assert "thinking" not in body


async def test_tool_use_with_fragmented_input_keeps_the_model_id(wire, provider_for):
    wire.play(Reply(body=data_file("anthropic/tool_use_response.txt")))
    result = await provider_for("anthropic").complete(ask(tools=[WEATHER]), lambda e: None)

    assert result.error is None
    assert result.stop_reason == StopReason.TOOL_USE
    assert result.text == "I'll check the current weather in Paris for you."
    assert result.tool_calls == [
        ToolCall(
            id="toolu_01NRLabsLyVHZPKxbKvkfSMn",
            name="get_weather",
            arguments={"location": "Paris"},
            raw_arguments='{"location": "Paris"}',
            provider_id="toolu_01NRLabsLyVHZPKxbKvkfSMn",
        )
    ]
    assert result.usage == Usage(input_tokens=377, output_tokens=65, cached_tokens=0)
    assert wire.requests[0].json()["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather",
            "input_schema": WEATHER.parameters,
        }
    ]


async def test_arguments_that_are_not_json_become_an_argument_error(wire, provider_for):
    wire.play(Reply(body=data_file("anthropic/tool_use_invalid_json_response.txt")))
    result = await provider_for("anthropic").complete(ask(), lambda e: None)

    assert result.error is None
    assert result.stop_reason == StopReason.TOOL_USE
    (call,) = result.tool_calls
    assert call.id == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    assert call.arguments is None
    assert call.raw_arguments == '{"location": "Paris", "unit": celsius}'
    assert call.argument_error is not None and "not valid JSON" in call.argument_error


async def test_thinking_block_keeps_its_signature_from_a_padded_stream(wire, provider_for, events):
    (recorded,) = cassette_bodies("anthropic/thinking_cassette.yaml")
    wire.play(Reply(body=recorded))
    result = await provider_for("anthropic", model="claude-3-7-sonnet-latest").complete(
        ask("Two names for a pet pelican, be brief", thinking=ThinkingLevel.MINIMAL), events
    )

    assert result.error is None
    assert result.stop_reason == StopReason.STOP
    assert result.thinking == [ThinkingBlock(text=THINKING_TEXT, signature=SIGNATURE)]
    assert result.text == "Scoop and Beaky"
    assert result.usage == Usage(input_tokens=45, output_tokens=94, cached_tokens=0)
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == THINKING_TEXT
    body = wire.requests[0].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] > 1024


async def test_redacted_thinking_parallel_tools_and_cache_usage(wire, provider_for):
    wire.play(Reply(body=data_file("anthropic/redacted_parallel_tools.txt")))
    result = await provider_for("anthropic").complete(ask(), lambda e: None)

    assert result.error is None
    assert result.stop_reason == StopReason.TOOL_USE
    assert result.thinking == [
        ThinkingBlock(
            redacted_data="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
        )
    ]
    assert result.text == "Checking both."
    assert [(c.id, c.arguments) for c in result.tool_calls] == [
        ("toolu_01A", {"path": "a.txt"}),
        ("toolu_01B", {"path": "b.txt"}),
    ]
    assert result.usage == Usage(input_tokens=2520, output_tokens=88, cached_tokens=2000)


async def test_error_event_mid_stream_is_the_run_error(wire, provider_for):
    wire.play(Reply(body=data_file("anthropic/midstream_error.txt")))
    result = await provider_for("anthropic").complete(ask(), lambda e: None)

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind == ErrorKind.STREAM
    assert "overloaded_error" in result.error.message
    assert result.text == "Let me"
    assert len(wire.requests) == 1


async def test_overload_event_before_any_content_is_retried(wire, provider_for, events):
    wire.play(
        Reply(body=data_file("anthropic/overloaded_before_content.txt")),
        Reply(body=data_file("anthropic/basic_response.txt")),
    )
    result = await provider_for("anthropic").complete(ask(), events)

    assert result.error is None
    assert result.text == "Hello there!"
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", " there", "!"]
    assert len(wire.requests) == 2


async def test_overloaded_529_is_retried(wire, provider_for, caplog):
    wire.play(
        Reply(529, data_file("anthropic/overloaded.json"), dict(JSON)),
        Reply(body=data_file("anthropic/basic_response.txt")),
    )
    with caplog.at_level(logging.WARNING, logger="mind.providers"):
        result = await provider_for("anthropic").complete(ask(), lambda e: None)

    assert result.text == "Hello there!"
    assert len(wire.requests) == 2
    assert any("HTTP 529" in r.getMessage() for r in caplog.records)


async def test_rejected_key_names_the_setting_and_is_not_retried(wire, provider_for):
    wire.play(Reply(401, data_file("anthropic/invalid_key.json"), dict(JSON)))
    result = await provider_for("anthropic").complete(ask(), lambda e: None)

    assert result.error is not None
    assert result.error.kind == ErrorKind.CONFIGURATION
    assert "anthropic" in result.error.message and "ANTHROPIC_API_KEY" in result.error.message
    assert API_KEY not in result.error.message
    assert len(wire.requests) == 1


async def test_follow_up_sends_thinking_unchanged_and_tool_results_in_one_user_turn(
    wire, provider_for
):
    wire.play(Reply(body=data_file("anthropic/basic_response.txt")))
    history = [
        ProviderMessage("user", "Read a and b"),
        ProviderMessage(
            "assistant",
            "Checking both.",
            thinking=[
                ThinkingBlock(text=THINKING_TEXT, signature=SIGNATURE),
                ThinkingBlock(redacted_data="opaque=="),
            ],
            tool_calls=[
                ToolCall("toolu_01A", "read_file", {"path": "a.txt"}),
                ToolCall("toolu_01B", "read_file", None, "{bad", "not JSON"),
            ],
        ),
        ProviderMessage("tool", "contents of a", tool_call_id="toolu_01A", tool_name="read_file"),
        ProviderMessage(
            "tool",
            "bad arguments",
            tool_call_id="toolu_01B",
            tool_name="read_file",
            is_error=True,
        ),
        ProviderMessage("user", "[2026-09-10 14:00:30 GMT] current time"),
    ]
    await provider_for("anthropic").complete(ProviderRequest("", history), lambda e: None)

    body = wire.requests[0].json()
    assert "system" not in body
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": THINKING_TEXT, "signature": SIGNATURE},
                {"type": "redacted_thinking", "data": "opaque=="},
                {"type": "text", "text": "Checking both."},
                {
                    "type": "tool_use",
                    "id": "toolu_01A",
                    "name": "read_file",
                    "input": {"path": "a.txt"},
                },
                {"type": "tool_use", "id": "toolu_01B", "name": "read_file", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "contents of a"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01B",
                    "content": "bad arguments",
                    "is_error": True,
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "[2026-09-10 14:00:30 GMT] current time"}],
        },
    ]


async def test_images_as_base64_blocks_or_placeholders(wire, provider_for):
    image = ImagePart("image/png", "iVBORw0KGgo=")
    request = ProviderRequest("", [ProviderMessage("user", "look", images=[image])])
    blind = ModelEntry(id="claude-text-only", context_window=100_000, max_output=4096)
    wire.play(
        Reply(body=data_file("anthropic/basic_response.txt")),
        Reply(body=data_file("anthropic/basic_response.txt")),
    )

    await provider_for("anthropic").complete(request, lambda e: None)
    await provider_for("anthropic", model="claude-text-only", models=[blind]).complete(
        request, lambda e: None
    )

    seeing, blind_content = (r.json()["messages"][0]["content"] for r in wire.requests)
    assert seeing == [
        {"type": "text", "text": "look"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
    ]
    assert blind_content == [{"type": "text", "text": f"look\n{IMAGE_UNSUPPORTED}"}]


async def test_a_profiles_thinking_budget_replaces_the_levels_own(wire, provider_for, events):
    (recorded,) = cassette_bodies("anthropic/thinking_cassette.yaml")
    wire.play(Reply(body=recorded))
    await provider_for("anthropic", model="claude-3-7-sonnet-latest").complete(
        ask("Two names for a pet pelican", thinking=ThinkingLevel.MINIMAL, thinking_budget=3000),
        events,
    )

    body = wire.requests[0].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 3000}
    assert body["max_tokens"] > 3000
