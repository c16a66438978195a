"""Structured output on each wire: a request's `output` schema held as the model's catalog entry
says, against the local wire server (the exact body shapes each API documents)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from provider_wire import Reply

from mind.providers.base import (
    OutputSchema,
    ProviderMessage,
    ProviderRequest,
    StopReason,
    ThinkingLevel,
)
from mind.providers.catalog import BUILTIN, known, lookup
from tobe.config import ConfigError, ModelEntry, ProviderSettings, load_settings

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["tendencies"],
    "properties": {"tendencies": {"type": "array", "items": {"type": "string"}}},
}
ANSWER = {"tendencies": ["water the plants"]}
LOCAL = "qwen2.5:7b"


def _entry(structured_output: str | None) -> list[ModelEntry]:
    return [
        ModelEntry(
            id=LOCAL,
            context_window=32768,
            max_output=4096,
            structured_output=structured_output,  # type: ignore[arg-type]
        )
    ]


def _wanted(**kwargs: Any) -> ProviderRequest:
    return ProviderRequest(
        system="Answer with JSON.",
        messages=[ProviderMessage("user", "water the plants")],
        output=OutputSchema("extract", SCHEMA),
        **kwargs,
    )


def _sse(*events: dict[str, Any], done: bool = False) -> bytes:
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    return ("".join(lines) + ("data: [DONE]\n\n" if done else "")).encode()


def _openai_text(text: str) -> bytes:
    return _sse(
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        done=True,
    )


def _openai_call(name: str, arguments: str) -> bytes:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name}}
    fragment = {"index": 0, "function": {"arguments": arguments}}
    return _sse(
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        done=True,
    )


def _anthropic_call(name: str, arguments: str) -> bytes:
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": {"usage": {"input_tokens": 30, "output_tokens": 1}}}),
        (
            "content_block_start",
            {"index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": name}},
        ),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "input_json_delta", "partial_json": arguments}},
        ),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ("message_stop", {}),
    ]
    return "".join(
        f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n" for kind, data in events
    ).encode()


def _gemini_text(text: str) -> bytes:
    chunk = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 8},
    }
    return _sse(chunk)


async def test_an_openai_model_is_held_to_the_schema_by_response_format(wire, provider_for):
    wire.play(Reply(body=_openai_text(json.dumps(ANSWER))))
    result = await provider_for("openai").complete(_wanted(), lambda e: None)
    assert json.loads(result.text) == ANSWER
    body = wire.requests[0].json()
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "extract", "schema": SCHEMA},
    }
    assert "tools" not in body and "tool_choice" not in body


async def test_a_json_object_model_gets_the_bare_json_mode(wire, provider_for):
    wire.play(Reply(body=_openai_text(json.dumps(ANSWER))))
    provider = provider_for("openai", model=LOCAL, models=_entry("json_object"))
    await provider.complete(_wanted(), lambda e: None)
    assert wire.requests[0].json()["response_format"] == {"type": "json_object"}


async def test_a_model_without_structured_output_gets_the_prompt_alone(wire, provider_for):
    wire.play(Reply(body=_openai_text("Sure! " + json.dumps(ANSWER))))
    provider = provider_for("openai", model=LOCAL, models=_entry(None))
    result = await provider.complete(_wanted(), lambda e: None)
    body = wire.requests[0].json()
    assert "response_format" not in body and "tools" not in body
    assert result.text.startswith("Sure! ")


async def test_a_request_without_a_schema_asks_for_no_format(wire, provider_for):
    wire.play(Reply(body=_openai_text("hello")))
    request = ProviderRequest(system="", messages=[ProviderMessage("user", "hi")])
    await provider_for("openai").complete(request, lambda e: None)
    assert "response_format" not in wire.requests[0].json()


async def test_a_tool_model_on_the_openai_wire_answers_through_a_forced_function(
    wire, provider_for
):
    wire.play(Reply(body=_openai_call("extract", json.dumps(ANSWER))))
    provider = provider_for("openai", model=LOCAL, models=_entry("tool"))
    result = await provider.complete(_wanted(), lambda e: None)
    body = wire.requests[0].json()
    assert body["tool_choice"] == {"type": "function", "function": {"name": "extract"}}
    [tool] = body["tools"]
    assert tool["function"]["name"] == "extract" and tool["function"]["parameters"] == SCHEMA
    assert "response_format" not in body
    assert json.loads(result.text) == ANSWER
    assert result.tool_calls == [] and result.stop_reason is StopReason.STOP


async def test_anthropic_forces_its_answer_tool_and_the_input_becomes_the_text(wire, provider_for):
    wire.play(Reply(body=_anthropic_call("extract", json.dumps(ANSWER))))
    result = await provider_for("anthropic").complete(_wanted(), lambda e: None)
    body = wire.requests[0].json()
    assert body["tool_choice"] == {"type": "tool", "name": "extract"}
    [tool] = body["tools"]
    assert (tool["name"], tool["input_schema"]) == ("extract", SCHEMA)
    assert json.loads(result.text) == ANSWER
    assert result.tool_calls == [] and result.stop_reason is StopReason.STOP


async def test_anthropic_with_thinking_on_is_not_forced(wire, provider_for):
    wire.play(Reply(body=_anthropic_call("extract", json.dumps(ANSWER))))
    await provider_for("anthropic").complete(_wanted(thinking=ThinkingLevel.LOW), lambda e: None)
    body = wire.requests[0].json()
    assert "tool_choice" not in body and "tools" not in body


async def test_gemini_gets_the_json_mime_type_and_the_json_schema(wire, provider_for):
    wire.play(Reply(body=_gemini_text(json.dumps(ANSWER))))
    result = await provider_for("gemini").complete(_wanted(), lambda e: None)
    config = wire.requests[0].json()["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == SCHEMA
    assert json.loads(result.text) == ANSWER


async def test_gemini_json_object_gets_the_mime_type_only(wire, provider_for):
    wire.play(Reply(body=_gemini_text(json.dumps(ANSWER))))
    models = [
        ModelEntry(
            id="gemini-x", context_window=10_000, max_output=1000, structured_output="json_object"
        )
    ]
    await provider_for("gemini", model="gemini-x", models=models).complete(
        _wanted(), lambda e: None
    )
    config = wire.requests[0].json()["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert "responseJsonSchema" not in config


def test_each_official_wire_names_its_structured_output_in_the_catalog():
    kinds = {kind: {info.structured_output for info in infos} for kind, infos in BUILTIN.items()}
    assert kinds == {"openai": {"json_schema"}, "anthropic": {"tool"}, "gemini": {"json_schema"}}


def test_the_model_entry_wins_over_the_provider_setting_which_wins_over_the_catalog():
    base = ProviderSettings(kind="openai", model="gpt-4o")
    assert lookup(base).structured_output == "json_schema"
    chosen = base.model_copy(update={"structured_output": "json_object"})
    assert lookup(chosen).structured_output == "json_object"
    local = ProviderSettings(kind="openai", model=LOCAL, models=_entry(None))
    assert lookup(local).structured_output == "none"
    told = local.model_copy(update={"structured_output": "json_schema"})
    assert lookup(told).structured_output == "json_schema"
    own = told.model_copy(update={"models": _entry("tool")})
    assert known(own, LOCAL) is not None and lookup(own).structured_output == "tool"


@pytest.mark.parametrize(
    ("toml", "setting"),
    [
        ('[provider]\nstructured_output = "xml"\n', "[provider] structured_output: 'xml'"),
        (
            '[[provider.models]]\nid = "m"\ncontext_window = 10\nmax_output = 5\n'
            'structured_output = "grammar"\n',
            "[[provider.models]] #1 structured_output: 'grammar'",
        ),
    ],
)
def test_a_structured_output_that_is_not_one_of_the_four_is_refused_by_name(
    tmp_path, monkeypatch, toml, setting
):
    config = tmp_path / "config.toml"
    config.write_text(toml)
    monkeypatch.setenv("TOBE_CONFIG", str(config))
    with pytest.raises(ConfigError) as refused:
        load_settings()
    message = str(refused.value)
    assert setting in message and "json_schema, json_object, tool, none" in message
    assert "config.toml:" in message
