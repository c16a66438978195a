"""The provider view is a pure function of the stored history and the current time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from mind.core.history import HistoryMessage
from mind.core.prompt import CURRENT_TIME_NOTE, NOTE_MARK, PLATFORM_PROMPT, system_prompt
from mind.core.view import NOT_EXECUTED, gmt_stamp, is_runtime_note, provider_messages
from mind.providers.base import ToolCall

T0 = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)
NOW = datetime(2026, 9, 10, 15, 1, 2, 999_000, tzinfo=UTC)


def _msg(id: int, role: str, text: str, minutes: int = 0, **kw) -> HistoryMessage:
    return HistoryMessage(id, role, text, T0 + timedelta(minutes=minutes), **kw)  # type: ignore[arg-type]


def test_every_message_starts_with_its_gmt_time_to_the_second():
    paris = timezone(timedelta(hours=2))
    history = [
        HistoryMessage(1, "user", "hello", datetime(2026, 9, 10, 16, 0, 30, 750_000, tzinfo=paris)),
        _msg(2, "assistant", "hi", 1),
    ]
    out = provider_messages(history, NOW)
    assert out[0].text == "[2026-09-10 14:00:30 GMT] hello"
    assert out[1].text == "[2026-09-10 14:01:30 GMT] hi"
    assert gmt_stamp(datetime(2026, 1, 2, 3, 4, 5)) == "[2026-01-02 03:04:05 GMT] "


def test_adjacent_user_messages_are_not_merged_and_order_is_kept():
    history = [_msg(1, "user", "one"), _msg(2, "user", "two", 1), _msg(3, "user", "three", 2)]
    out = provider_messages(history, NOW)
    assert [(m.role, m.text[26:]) for m in out[:3]] == [
        ("user", "one"), ("user", "two"), ("user", "three")
    ]
    assert len(out) == 4


def test_runtime_notes_become_user_messages_marked_as_platform_notes():
    out = provider_messages([_msg(1, "note", "door opened")], NOW)
    assert out[0].role == "user"
    assert out[0].text == f"[2026-09-10 14:00:30 GMT] {NOTE_MARK} door opened"
    assert is_runtime_note(out[0].text)
    assert not is_runtime_note("[2026-09-10 14:00:30 GMT] door opened")


def test_a_current_time_note_is_appended_per_request_and_never_stored():
    history = [_msg(1, "user", "hello")]
    first = provider_messages(history, NOW)
    later = provider_messages(history, NOW + timedelta(seconds=5))
    assert first[-1].role == "user"
    assert first[-1].text == f"[2026-09-10 15:01:02 GMT] {CURRENT_TIME_NOTE}"
    assert later[-1].text == f"[2026-09-10 15:01:07 GMT] {CURRENT_TIME_NOTE}"
    assert len(history) == 1 and len(first) == 2


def test_tool_results_keep_their_call_ids_and_missing_results_are_synthesized():
    calls = (ToolCall("call_a", "wait", {}), ToolCall("call_b", "current_time", {}))
    history = [
        _msg(1, "user", "go"),
        _msg(2, "assistant", "", 1, tool_calls=calls),
        _msg(3, "tool", "done", 2, tool_call_id="call_a", tool_name="wait"),
        _msg(4, "user", "next", 3),
    ]
    out = provider_messages(history, NOW)
    assert [(m.role, m.tool_call_id) for m in out] == [
        ("user", ""), ("assistant", ""), ("tool", "call_a"), ("tool", "call_b"), ("user", ""),
        ("user", ""),
    ]
    assert out[1].tool_calls == list(calls)
    assert out[3].is_error and out[3].text.endswith(NOT_EXECUTED)
    assert out[3].tool_name == "current_time"


def test_system_prompt_joins_platform_persona_and_catalogs_with_one_blank_line():
    text = system_prompt(PLATFORM_PROMPT, "You are Bo.\n", ["Skills:\n- a", "", "Resources:\n- b"])
    assert text == f"{PLATFORM_PROMPT}\n\nYou are Bo.\n\nSkills:\n- a\n\nResources:\n- b"
    assert system_prompt("P", "", []) == "P"
