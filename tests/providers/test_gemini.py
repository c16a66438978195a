"""Gemini generateContent (SSE) against the local wire server."""

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
    ThinkingBlock,
    ThinkingLevel,
    ToolCall,
    ToolDefinition,
    Usage,
)
from mind.providers.vision import IMAGE_UNSUPPORTED
from tobe.config import ModelEntry

COUNTRY = ToolDefinition("get_country", "", {"type": "object", "properties": {}})
QUESTION = "What is the capital of the user country? Call the tool"


def ask(text: str = QUESTION, **kwargs: object) -> ProviderRequest:
    return ProviderRequest(system="Be brief.", messages=[ProviderMessage("user", text)], **kwargs)  # type: ignore[arg-type]


async def test_function_call_without_id_gets_one_and_keeps_its_thought_signature(
    wire, provider_for
):
    first, _ = cassette_bodies("gemini/tool_call_thought_signature.yaml")
    wire.play(Reply(body=first))
    result = await provider_for("gemini", model="gemini-3-pro-preview").complete(
        ask(tools=[COUNTRY], thinking=ThinkingLevel.HIGH), lambda e: None
    )

    assert result.error is None
    assert result.stop_reason == StopReason.TOOL_USE
    assert result.text == ""
    (call,) = result.tool_calls
    assert call.id.startswith("call_") and len(call.id) > 10
    assert call.name == "get_country"
    assert call.arguments == {}
    assert call.thought_signature is not None
    assert call.thought_signature.startswith("Et8ECtwEAXLI2nyCB1jKZUE4ZxdH07XhZlpU7X7tlcbNO8oQ")
    assert call.thought_signature.endswith("u0HegvoS6z1/ufbMdg==")
    assert result.usage == Usage(
        input_tokens=29, output_tokens=120, cached_tokens=0, reasoning_tokens=110
    )

    (request,) = wire.requests
    assert request.path == "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == API_KEY
    assert "key=" not in request.path
    body = request.json()
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": QUESTION}]}]
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_country",
                    "description": "",
                    "parametersJsonSchema": COUNTRY.parameters,
                }
            ]
        }
    ]
    assert body["generationConfig"]["thinkingConfig"] == {
        "thinkingLevel": "high",
        "includeThoughts": True,
    }


async def test_follow_up_returns_the_signature_on_its_part_and_a_function_response(
    wire, provider_for
):
    first, second = cassette_bodies("gemini/tool_call_thought_signature.yaml")
    wire.play(Reply(body=first), Reply(body=second))
    provider = provider_for("gemini", model="gemini-3-pro-preview")
    step = await provider.complete(ask(tools=[COUNTRY]), lambda e: None)
    (call,) = step.tool_calls
    history = [
        ProviderMessage("user", QUESTION),
        ProviderMessage("assistant", step.text, thinking=step.thinking, tool_calls=[call]),
        ProviderMessage("tool", "Mexico", tool_call_id=call.id, tool_name="get_country"),
    ]

    result = await provider.complete(ProviderRequest("", history, [COUNTRY]), lambda e: None)

    assert result.error is None
    assert result.stop_reason == StopReason.STOP
    assert result.text == "The capital of Mexico is Mexico City."
    assert result.usage == Usage(input_tokens=165, output_tokens=8, cached_tokens=0)
    contents = wire.requests[1].json()["contents"]
    assert contents[1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"id": call.id, "name": "get_country", "args": {}},
                    "thoughtSignature": call.thought_signature,
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": call.id,
                        "name": "get_country",
                        "response": {"output": "Mexico"},
                    }
                }
            ],
        },
    ]


async def test_crlf_stream_with_unterminated_last_event_and_thoughts(wire, provider_for):
    wire.play(Reply(body=data_file("gemini/thoughts_unterminated.sse")))
    result = await provider_for("gemini").complete(
        ask("hi", thinking=ThinkingLevel.LOW), lambda e: None
    )

    assert result.error is None
    assert result.stop_reason == StopReason.STOP
    assert result.text == "Hello there!"
    assert result.thinking == [
        ThinkingBlock(text="**Planning**\n\nA short greeting. Keep it brief."),
        ThinkingBlock(text="", signature="CiIBcsjafACy65Vwcm8qOq5jkTTLReoTQLfzt+Kzcg/hK99F"),
    ]
    assert result.usage == Usage(
        input_tokens=34, output_tokens=25, cached_tokens=8, reasoning_tokens=20
    )
    assert wire.requests[0].json()["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 1024,
        "includeThoughts": True,
    }


async def test_answer_signature_goes_back_on_the_text_part(wire, provider_for):
    wire.play(Reply(body=data_file("gemini/max_tokens.sse")))
    history = [
        ProviderMessage("user", "hi"),
        ProviderMessage(
            "assistant",
            "Hello there!",
            thinking=[
                ThinkingBlock(text="Planning.", signature="sig-thought"),
                ThinkingBlock(text="", signature="sig-answer"),
            ],
        ),
        ProviderMessage("user", "and?"),
    ]
    await provider_for("gemini").complete(ProviderRequest("", history), lambda e: None)

    assert wire.requests[0].json()["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "Planning.", "thought": True, "thoughtSignature": "sig-thought"},
            {"text": "Hello there!", "thoughtSignature": "sig-answer"},
        ],
    }


async def test_max_tokens_and_safety_stops(wire, provider_for):
    wire.play(
        Reply(body=data_file("gemini/max_tokens.sse")), Reply(body=data_file("gemini/safety.sse"))
    )
    provider = provider_for("gemini")

    length = await provider.complete(ask("long"), lambda e: None)
    safety = await provider.complete(ask("bad"), lambda e: None)

    assert length.stop_reason == StopReason.LENGTH
    assert length.text == "The first part of a long answer"
    assert length.error is None
    assert safety.stop_reason == StopReason.SAFETY
    assert safety.text == ""
    assert safety.error is None


async def test_raw_json_error_after_a_200_is_the_run_error(wire, provider_for):
    wire.play(Reply(body=data_file("gemini/error_after_200.sse")))
    result = await provider_for("gemini").complete(ask(), lambda e: None)

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind == ErrorKind.STREAM
    assert result.error.status == 503
    assert "overloaded" in result.error.message
    assert result.text == "Partial answer"


async def test_more_of_the_answer_after_a_finish_reason_makes_a_final_one_required(
    wire, provider_for
):
    wire.play(Reply(body=data_file("gemini/more_after_stop.sse")))
    result = await provider_for("gemini").complete(ask(), lambda e: None)

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert "ended before the response was complete" in result.error.message
    assert result.text == "The capital of Mexico is Mexico"


async def test_a_connection_dropped_after_the_finish_reason_is_an_error(wire, provider_for):
    answer = cassette_bodies("gemini/tool_call_thought_signature.yaml")[1]
    wire.play(Reply(body=answer, drop=True))
    result = await provider_for("gemini").complete(ask(), lambda e: None)

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind == ErrorKind.STREAM
    assert "the stream broke" in result.error.message
    assert result.text == "The capital of Mexico is Mexico City."


async def test_text_a_proxy_writes_after_the_last_chunk_ends_the_result_as_an_error(
    wire, provider_for
):
    answer = cassette_bodies("gemini/tool_call_thought_signature.yaml")[1]
    wire.play(Reply(body=answer + b"upstream connect error or disconnect/reset before headers\n"))
    result = await provider_for("gemini").complete(ask(), lambda e: None)

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind == ErrorKind.STREAM
    assert "upstream connect error" in result.error.message


async def test_invalid_key_400_is_a_configuration_error(wire, provider_for):
    wire.play(Reply(400, data_file("gemini/api_key_invalid.json"), dict(JSON)))
    result = await provider_for("gemini").complete(ask(), lambda e: None)

    assert result.error is not None
    assert result.error.kind == ErrorKind.CONFIGURATION
    assert result.error.status == 400
    assert "gemini" in result.error.message and "GEMINI_API_KEY" in result.error.message
    assert len(wire.requests) == 1


async def test_rate_limit_honours_retry_info_delay_from_the_body(wire, provider_for, caplog):
    wire.play(
        Reply(429, data_file("gemini/rate_limited.json"), dict(JSON)),
        Reply(body=data_file("gemini/max_tokens.sse")),
    )
    with caplog.at_level(logging.WARNING, logger="mind.providers"):
        result = await provider_for("gemini").complete(ask(), lambda e: None)

    assert result.stop_reason == StopReason.LENGTH
    assert len(wire.requests) == 2
    assert any("retry 1/2 in 1.00s" in r.getMessage() for r in caplog.records)


async def test_parallel_calls_without_ids_get_distinct_ids(wire, provider_for):
    wire.play(Reply(body=data_file("gemini/parallel_calls_no_ids.sse")))
    result = await provider_for("gemini", model="gemini-2.0-flash").complete(
        ask(thinking=ThinkingLevel.HIGH), lambda e: None
    )

    assert result.stop_reason == StopReason.TOOL_USE
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("read_file", {"path": "a.txt"}),
        ("read_file", {"path": "b.txt"}),
    ]
    assert len({c.id for c in result.tool_calls}) == 2
    assert [c.provider_id for c in result.tool_calls] == ["", ""]
    assert "thinkingConfig" not in wire.requests[0].json()["generationConfig"]


async def test_tool_results_share_one_user_turn_and_errors_use_the_error_key(wire, provider_for):
    wire.play(Reply(body=data_file("gemini/max_tokens.sse")))
    history = [
        ProviderMessage("user", "read both"),
        ProviderMessage(
            "assistant",
            "",
            tool_calls=[
                ToolCall("c1", "read_file", {"path": "a.txt"}),
                ToolCall("c2", "read_file", {"path": "b.txt"}),
            ],
        ),
        ProviderMessage("tool", "A", tool_call_id="c1", tool_name="read_file"),
        ProviderMessage(
            "tool", "no such file", tool_call_id="c2", tool_name="read_file", is_error=True
        ),
    ]
    await provider_for("gemini").complete(ProviderRequest("", history), lambda e: None)

    assert wire.requests[0].json()["contents"][2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "A"}}},
            {
                "functionResponse": {
                    "id": "c2",
                    "name": "read_file",
                    "response": {"error": "no such file"},
                }
            },
        ],
    }


async def test_images_inline_or_placeholder(wire, provider_for):
    image = ImagePart("image/jpeg", "/9j/4AAQ")
    request = ProviderRequest("", [ProviderMessage("user", "see", images=[image])])
    blind = ModelEntry(id="gemma-text", context_window=8192, max_output=1024)
    wire.play(
        Reply(body=data_file("gemini/max_tokens.sse")),
        Reply(body=data_file("gemini/max_tokens.sse")),
    )

    await provider_for("gemini").complete(request, lambda e: None)
    await provider_for("gemini", model="gemma-text", models=[blind]).complete(
        request, lambda e: None
    )

    seeing, blind_parts = (r.json()["contents"][0]["parts"] for r in wire.requests)
    assert seeing == [
        {"text": "see"},
        {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}},
    ]
    assert blind_parts == [{"text": f"see\n{IMAGE_UNSUPPORTED}"}]


async def test_a_profiles_thinking_budget_replaces_the_levels_own(wire, provider_for):
    wire.play(Reply(body=data_file("gemini/thoughts_unterminated.sse")))
    await provider_for("gemini").complete(
        ask("hi", thinking=ThinkingLevel.LOW, thinking_budget=2000), lambda e: None
    )

    assert wire.requests[0].json()["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 2000,
        "includeThoughts": True,
    }
