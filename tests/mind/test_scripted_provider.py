"""The Scripted provider plays a script deterministically from the request alone."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mind.conversation.history import HistoryMessage
from mind.core.view import provider_messages
from mind.providers.base import (
    ErrorKind,
    ProviderRequest,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolDefinition,
)
from mind.providers.factory import ProviderConfigError
from mind.scripted.configured import build_provider
from mind.scripted.provider import ScriptedProvider
from mind.scripted.script import ScriptError, load_script, parse_script
from tobe.config import ProviderSettings
from tobe.provider_detect import DEMO_SCRIPT

T = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)

SCRIPT = """
runs:
  - match: "^weather"
    steps:
      - thinking: "need data"
        text: "Looking it up."
        chunks: 3
        tool_calls:
          - {name: forecast, arguments: {city: Paris}}
          - {name: forecast, raw_arguments: "{oops"}
      - expect: {last_role: tool, last_contains: "sunny", tools_include: [forecast]}
        text: "Sunny."
  - match: "^fail"
    steps:
      - {error: "overloaded", error_kind: unavailable}
  - match: "^slow"
    steps:
      - {delay: 30, text: "late"}
"""


def _request(*history: HistoryMessage, tools: tuple[str, ...] = ("forecast",)) -> ProviderRequest:
    return ProviderRequest(
        system="sys",
        messages=provider_messages(list(history), T),
        tools=[ToolDefinition(name, "", {"type": "object"}) for name in tools],
    )


def _user(id: int, text: str) -> HistoryMessage:
    return HistoryMessage(id, "user", text, T)


def _play(provider: ScriptedProvider, request: ProviderRequest):
    events: list = []
    result = asyncio.run(provider.complete(request, events.append))
    return result, events


def test_the_first_step_streams_deltas_and_returns_the_assembled_batch():
    provider = ScriptedProvider(parse_script(SCRIPT, "test"))
    result, events = _play(provider, _request(_user(1, "weather in Paris?")))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Looki", "ng it", " up."]
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["nee", "d d", "ata"]
    assert [e.name for e in events if isinstance(e, ToolCallDelta)] == ["forecast", "forecast"]
    assert result.text == "Looking it up." and result.thinking[0].text == "need data"
    assert result.stop_reason is StopReason.TOOL_USE
    good, bad = result.tool_calls
    assert good.arguments == {"city": "Paris"} and good.argument_error is None
    assert bad.arguments is None and "not valid JSON" in (bad.argument_error or "")


def _second_step_history(tool_text: str) -> list[HistoryMessage]:
    call = ToolCall("call_1", "forecast", {"city": "Paris"})
    return [
        _user(1, "weather in Paris?"),
        HistoryMessage(2, "assistant", "Looking it up.", T, tool_calls=(call,)),
        HistoryMessage(3, "tool", tool_text, T, tool_call_id="call_1", tool_name="forecast"),
    ]


def test_the_step_index_comes_from_the_assistant_messages_after_the_user_message():
    provider = ScriptedProvider(parse_script(SCRIPT, "test"))
    result, _ = _play(provider, _request(*_second_step_history('{"sky": "sunny"}')))
    assert result.text == "Sunny." and result.stop_reason is StopReason.STOP


def test_a_failed_expectation_ends_the_step_with_a_clear_error():
    provider = ScriptedProvider(parse_script(SCRIPT, "test"))
    result, _ = _play(provider, _request(*_second_step_history('{"sky": "rain"}')))
    assert result.stop_reason is StopReason.ERROR and result.error is not None
    assert "run 0 step 1" in result.error.message and "'sunny'" in result.error.message
    result, _ = _play(provider, _request(*_second_step_history("sunny"), tools=()))
    assert "expected tools ['forecast']" in (result.error.message if result.error else "")


def test_errors_unmatched_messages_and_missing_steps_end_with_stop_reason_error():
    provider = ScriptedProvider(parse_script(SCRIPT, "test"))
    result, _ = _play(provider, _request(_user(1, "fail now")))
    assert result.error and result.error.kind is ErrorKind.UNAVAILABLE
    assert result.error.message == "overloaded"
    result, _ = _play(provider, _request(_user(1, "something else")))
    assert result.error and "no scripted run matches" in result.error.message
    history = [*_second_step_history("sunny"), HistoryMessage(4, "assistant", "Sunny.", T)]
    result, _ = _play(provider, _request(*history))
    assert result.error and "has 2 steps; step 2 was requested" in result.error.message


async def test_a_delay_is_cancellable():
    provider = ScriptedProvider(parse_script(SCRIPT, "test"))
    task = asyncio.create_task(provider.complete(_request(_user(1, "slow")), lambda e: None))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_concurrent_requests_of_different_conversations_do_not_interfere():
    provider = ScriptedProvider(parse_script(SCRIPT, "test"))

    async def both():
        return await asyncio.gather(
            provider.complete(_request(*_second_step_history("sunny")), lambda e: None),
            provider.complete(_request(_user(1, "weather?")), lambda e: None),
        )

    second, first = asyncio.run(both())
    assert second.text == "Sunny." and first.text == "Looking it up."


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("runs: [unclosed", "not valid YAML"),
        ("- just a list", "must be a mapping"),
        ("runs: []", "runs"),
        ("runs: [{match: '(', steps: [{text: a}]}]", "not a valid regular expression"),
        ("runs: [{match: a, steps: [{text: a, colour: b}]}]", "colour"),
        (
            "runs: [{match: a, steps: [{tool_calls: "
            "[{name: t, arguments: {}, raw_arguments: x}]}]}]",
            "not both",
        ),
        ("runs: [{match: a, steps: [{delay: -1}]}]", "delay"),
    ],
)
def test_a_script_that_does_not_parse_or_validate_names_the_file_and_the_problem(text, problem):
    with pytest.raises(ScriptError) as caught:
        parse_script(text, "my-script.yaml")
    assert str(caught.value).startswith("my-script.yaml: ") and problem in str(caught.value)


def test_json_scripts_and_the_demo_script_load(tmp_path: Path):
    path = tmp_path / "s.json"
    path.write_text('{"runs": [{"match": ".*", "steps": [{"text": "hi"}]}]}')
    assert load_script(path).runs[0].steps[0].text == "hi"
    assert len(load_script(DEMO_SCRIPT).runs) == 3
    with pytest.raises(ScriptError, match="cannot read"):
        load_script(tmp_path / "missing.yaml")


def test_the_factory_builds_the_scripted_provider_or_says_what_to_fix(tmp_path: Path):
    assert isinstance(build_provider(ProviderSettings()), ScriptedProvider)
    with pytest.raises(ProviderConfigError, match="needs a script file"):
        build_provider(ProviderSettings(kind="scripted"))


NOTE_SCRIPT = """
runs:
  - match: "door opened"
    steps:
      - text: "checking the time"
        tool_calls: [{name: forecast, arguments: {city: Paris}}]
      - {text: "noted the door"}
  - match: "^hello"
    steps:
      - {text: "hi"}
"""


def test_an_observation_note_after_an_ended_run_starts_its_own_run_and_steps():
    provider = ScriptedProvider(parse_script(NOTE_SCRIPT, "test"))
    call = ToolCall("call_9", "forecast", {"city": "Paris"})
    earlier = [
        _user(1, "hello"),
        HistoryMessage(2, "assistant", "hi", T),
        HistoryMessage(3, "note", "webhook: door opened", T),
    ]
    first, _ = _play(provider, _request(*earlier))
    assert first.text == "checking the time" and first.stop_reason is StopReason.TOOL_USE
    later = [
        *earlier,
        HistoryMessage(4, "assistant", "checking the time", T, tool_calls=(call,)),
        HistoryMessage(5, "tool", "{}", T, tool_call_id="call_9", tool_name="forecast"),
    ]
    second, _ = _play(provider, _request(*later))
    assert second.text == "noted the door"
    # A conversation that only ever received notes works the same way.
    alone, _ = _play(provider, _request(HistoryMessage(1, "note", "door opened", T)))
    assert alone.text == "checking the time"


def test_a_call_takes_the_arguments_it_names_from_the_last_tool_result():
    script = """
runs:
  - match: "^weather"
    steps:
      - tool_calls: [{name: forecast, arguments: {city: Paris}}]
      - tool_calls:
          - {name: forecast, arguments: {days: 2}, arguments_from_last: {city: town, x: absent}}
"""
    provider = ScriptedProvider(parse_script(script, "test"))
    result, _ = _play(provider, _request(*_second_step_history('{"town": "Lyon"}')))
    (call,) = result.tool_calls
    assert call.arguments == {"days": 2, "city": "Lyon"}
