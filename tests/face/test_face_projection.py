"""Detail modes: shown as admitted or downgraded, never upgraded."""

from __future__ import annotations

from face.projection import (
    SUMMARY,
    TRANSPARENT,
    AdmissionModes,
    project_event,
    project_snapshot,
)
from tobe.v1 import common_pb2, events_pb2, mind_pb2

RAW_ARGS = '{"password": "hunter2"}'
RAW_RESULT = "secret output"


def tool(
    admitted: int, status: int = common_pb2.TOOL_STATUS_SUCCEEDED
) -> common_pb2.ToolProjection:
    return common_pb2.ToolProjection(
        tool_call_id="call-1",
        tool="login",
        admitted_mode=admitted,
        shown_mode=admitted,
        arguments_summary="password=<7 chars>",
        arguments_json=RAW_ARGS if admitted == TRANSPARENT else "",
        result_summary="ok, 13 chars",
        result_text=RAW_RESULT if admitted == TRANSPARENT else "",
        status=status,
    )


def tool_event(admitted: int) -> events_pb2.Event:
    return events_pb2.Event(durable_id=1, audience=["alice"], tool_changed=tool(admitted))


def leaky_event(admitted: int) -> events_pb2.Event:
    """A tool event carrying raw text despite its admission (what must never pass)."""
    event = tool_event(admitted)
    event.tool_changed.arguments_json = RAW_ARGS
    event.tool_changed.result_text = RAW_RESULT
    event.tool_changed.shown_mode = TRANSPARENT
    return event


def tool_result_message() -> events_pb2.Event:
    return events_pb2.Event(
        durable_id=2,
        audience=["alice"],
        message_appended=common_pb2.Message(
            id=7, role=common_pb2.MESSAGE_ROLE_TOOL, tool_call_id="call-1", text=RAW_RESULT
        ),
    )


def test_a_summary_admission_never_shows_raw_arguments_to_a_transparent_viewer() -> None:
    modes = AdmissionModes()
    shown = project_event(leaky_event(SUMMARY), TRANSPARENT, modes)
    assert shown is not None
    assert shown.tool_changed.arguments_json == ""
    assert shown.tool_changed.result_text == ""
    assert shown.tool_changed.shown_mode == SUMMARY
    assert shown.tool_changed.arguments_summary == "password=<7 chars>"


def test_a_summary_admission_hides_the_tool_result_message_from_a_transparent_viewer() -> None:
    modes = AdmissionModes()
    modes.learn(tool_event(SUMMARY))
    shown = project_event(tool_result_message(), TRANSPARENT, modes)
    assert shown is not None and shown.message_appended.text == ""


def test_a_transparent_admission_is_shown_raw_to_a_transparent_viewer() -> None:
    modes = AdmissionModes()
    event = tool_event(TRANSPARENT)
    modes.learn(event)
    assert project_event(event, TRANSPARENT, modes) is event
    assert project_event(tool_result_message(), TRANSPARENT, modes).message_appended.text == (
        RAW_RESULT
    )


def test_a_transparent_admission_is_downgraded_for_a_summary_viewer() -> None:
    modes = AdmissionModes()
    event = tool_event(TRANSPARENT)
    modes.learn(event)
    shown = project_event(event, SUMMARY, modes)
    assert shown.tool_changed.arguments_json == ""
    assert shown.tool_changed.result_text == ""
    assert shown.tool_changed.shown_mode == SUMMARY
    assert shown.tool_changed.admitted_mode == TRANSPARENT
    assert project_event(tool_result_message(), SUMMARY, modes).message_appended.text == ""
    # The shared original is untouched: other viewers still get it in full.
    assert event.tool_changed.arguments_json == RAW_ARGS


def test_approval_arguments_follow_the_admission_of_their_call() -> None:
    modes = AdmissionModes()
    modes.learn(tool_event(SUMMARY))
    approval = events_pb2.Event(
        durable_id=3,
        audience=["alice"],
        approval_changed=common_pb2.Approval(
            id="a1", tool_call_id="call-1", arguments_json=RAW_ARGS
        ),
    )
    assert project_event(approval, TRANSPARENT, modes).approval_changed.arguments_json == ""
    assert project_event(approval, SUMMARY, AdmissionModes()).approval_changed.arguments_json == ""


def test_thinking_reaches_only_transparent_viewers() -> None:
    modes = AdmissionModes()
    thinking = events_pb2.Event(audience=["alice"], thinking_delta=events_pb2.TextDelta(text="hm"))
    assert project_event(thinking, SUMMARY, modes) is None
    assert project_event(thinking, TRANSPARENT, modes) is thinking
    message = events_pb2.Event(
        durable_id=4,
        audience=["alice"],
        message_appended=common_pb2.Message(
            role=common_pb2.MESSAGE_ROLE_ASSISTANT, text="answer", thinking="private"
        ),
    )
    shown = project_event(message, SUMMARY, modes)
    assert shown.message_appended.thinking == "" and shown.message_appended.text == "answer"


def test_progress_of_a_transparent_call_loses_its_text_for_summary_viewers() -> None:
    modes = AdmissionModes()
    modes.learn(tool_event(TRANSPARENT))
    progress = events_pb2.Event(
        audience=["alice"],
        tool_progress=events_pb2.ToolProgress(
            tool_call_id="call-1", message="raw line", fraction=0.5
        ),
    )
    shown = project_event(progress, SUMMARY, modes)
    assert shown.tool_progress.message == "" and shown.tool_progress.fraction == 0.5
    assert project_event(progress, TRANSPARENT, modes).tool_progress.message == "raw line"


def test_snapshots_are_projected_like_events() -> None:
    snapshot = mind_pb2.GetSnapshotResponse(
        tools=[tool(SUMMARY)],
        messages=[tool_result_message().message_appended],
        last_event_id=9,
    )
    snapshot.tools[0].arguments_json = RAW_ARGS
    shown = project_snapshot(snapshot, TRANSPARENT)
    assert shown.tools[0].arguments_json == ""
    assert shown.messages[0].text == ""
    assert shown.last_event_id == 9
