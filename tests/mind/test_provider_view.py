"""The provider view is a pure function of the stored history and the current time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from mind.conversation.history import HistoryMessage, gmt_stamp
from mind.conversation.records import assistant_payload, history_message
from mind.core.prompt import CURRENT_TIME_NOTE, NOTE_MARK, PLATFORM_PROMPT, system_prompt
from mind.core.view import (
    NOT_EXECUTED,
    ProviderView,
    is_runtime_note,
    provider_messages,
)
from mind.providers.base import ProviderResult, ToolCall
from mind.store import models

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
        ("user", "one"),
        ("user", "two"),
        ("user", "three"),
    ]
    assert len(out) == 4


def test_runtime_notes_become_user_messages_marked_as_platform_notes():
    out = provider_messages([_msg(1, "note", "door opened")], NOW)
    assert out[0].role == "user"
    assert out[0].text == f"[2026-09-10 14:00:30 GMT] {NOTE_MARK} door opened"
    assert is_runtime_note(out[0].text)
    assert not is_runtime_note("[2026-09-10 14:00:30 GMT] door opened")


def test_a_message_posted_by_code_reaches_the_model_as_a_note_saying_who_posted_it():
    history = [
        _msg(1, "assistant", "Welcome! I keep your running plan.", posted_by="welcome"),
        _msg(2, "user", "hi", 1),
        _msg(3, "assistant", "hello", 2),
        _msg(4, "assistant", "Reminder: stretch.", 3, posted_by="scheduler"),
    ]
    out = provider_messages(history, NOW)
    assert [m.role for m in out] == ["user", "user", "assistant", "user", "user"]
    assert out[0].text == (
        f"[2026-09-10 14:00:30 GMT] {NOTE_MARK} Sent to the conversation on your side by "
        "welcome, not written by you:\nWelcome! I keep your running plan."
    )
    assert is_runtime_note(out[3].text) and "by scheduler" in out[3].text


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
        ("user", ""),
        ("assistant", ""),
        ("tool", "call_a"),
        ("tool", "call_b"),
        ("user", ""),
        ("user", ""),
    ]
    assert out[1].tool_calls == list(calls)
    assert out[3].is_error and out[3].text.endswith(NOT_EXECUTED)
    assert out[3].tool_name == "current_time"


def test_calls_and_their_results_carry_the_models_own_ids_on_the_wire():
    calls = (
        ToolCall("call_mind_a", "wait", {}, provider_id="toolu_01A"),
        ToolCall("call_mind_b", "current_time", {}, provider_id="fc-b"),
        ToolCall("call_mind_c", "current_time", {}),
    )
    history = [
        _msg(1, "user", "go"),
        _msg(2, "assistant", "", 1, tool_calls=calls),
        _msg(3, "tool", "done", 2, tool_call_id="call_mind_a", tool_name="wait"),
        _msg(4, "tool", "noon", 2, tool_call_id="call_mind_c", tool_name="current_time"),
    ]
    out = provider_messages(history, NOW)

    assert [call.id for call in out[1].tool_calls] == ["toolu_01A", "fc-b", "call_mind_c"]
    assert [(m.tool_call_id, m.is_error) for m in out[2:5]] == [
        ("toolu_01A", False),
        ("call_mind_c", False),
        ("fc-b", True),
    ]
    assert out[4].text.endswith(NOT_EXECUTED)
    assert [call.id for call in history[1].tool_calls] == [
        "call_mind_a",
        "call_mind_b",
        "call_mind_c",
    ]


def test_an_id_the_model_gave_to_several_calls_is_replaced_by_the_mind_ids():
    calls = (
        ToolCall("call_mind_a", "read_file", {"path": "a"}, provider_id="dup"),
        ToolCall("call_mind_b", "read_file", {"path": "b"}, provider_id="dup"),
    )
    history = [
        _msg(1, "assistant", "", tool_calls=calls),
        _msg(2, "tool", "A", 1, tool_call_id="call_mind_a", tool_name="read_file"),
        _msg(3, "tool", "B", 1, tool_call_id="call_mind_b", tool_name="read_file"),
    ]
    out = provider_messages(history, NOW)

    assert [call.id for call in out[0].tool_calls] == ["call_mind_a", "call_mind_b"]
    assert [m.tool_call_id for m in out[1:3]] == ["call_mind_a", "call_mind_b"]


def test_stored_calls_keep_the_models_id_and_older_rows_without_one_still_render():
    call = ToolCall("call_mind_a", "wait", {}, "{}", provider_id="toolu_01A")
    result = ProviderResult(tool_calls=[call])
    stored = models.Message(
        id=2,
        role="assistant",
        text="",
        created_at=T0,
        payload=assistant_payload(result, [call], "transparent", 0),
    )
    older_payload = assistant_payload(result, [call], "transparent", 0)
    del older_payload["tool_calls"][0]["provider_id"]
    older = models.Message(id=2, role="assistant", text="", created_at=T0, payload=older_payload)
    answer = _msg(3, "tool", "done", 1, tool_call_id="call_mind_a", tool_name="wait")

    assert history_message(stored).tool_calls == (call,)
    kept = provider_messages([history_message(stored), answer], NOW)
    before = provider_messages([history_message(older), answer], NOW)
    assert (kept[0].tool_calls[0].id, kept[1].tool_call_id) == ("toolu_01A", "toolu_01A")
    assert (before[0].tool_calls[0].id, before[1].tool_call_id) == ("call_mind_a", "call_mind_a")


def test_system_prompt_joins_platform_persona_and_catalogs_with_one_blank_line():
    text = system_prompt(PLATFORM_PROMPT, "You are Bo.\n", ["Skills:\n- a", "", "Resources:\n- b"])
    assert text == f"{PLATFORM_PROMPT}\n\nYou are Bo.\n\nSkills:\n- a\n\nResources:\n- b"
    assert system_prompt("P", "", []) == "P"


def test_a_view_kept_across_steps_renders_what_a_fresh_one_renders():
    """Every prefix of a growing transcript (batches open, answered, left unanswered, a result
    arriving after the next message) renders the same through one kept view as from scratch."""
    calls = (ToolCall("call_a", "wait", {}), ToolCall("call_b", "current_time", {}))
    transcript = [
        _msg(1, "user", "go"),
        _msg(2, "assistant", "", 1, tool_calls=calls),
        _msg(3, "tool", "done", 2, tool_call_id="call_a", tool_name="wait"),
        _msg(4, "note", "door opened", 3),
        _msg(5, "tool", "late", 3, tool_call_id="call_b", tool_name="current_time"),
        _msg(6, "assistant", "", 4, tool_calls=(ToolCall("call_c", "wait", {}),)),
        _msg(7, "tool", "ok", 5, tool_call_id="call_c", tool_name="wait"),
        _msg(8, "assistant", "all done", 6),
        _msg(9, "user", "thanks", 7),
    ]
    view = ProviderView()
    for end in range(1, len(transcript) + 1):
        assert view.messages(transcript[:end], NOW) == provider_messages(transcript[:end], NOW)


def test_a_kept_view_given_another_transcript_starts_over():
    view = ProviderView()
    view.messages([_msg(1, "user", "first"), _msg(2, "assistant", "one", 1)], NOW)
    other = [_msg(7, "user", "elsewhere"), _msg(8, "assistant", "two", 1), _msg(9, "user", "x")]
    assert view.messages(other, NOW) == provider_messages(other, NOW)
