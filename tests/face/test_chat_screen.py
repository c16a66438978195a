"""What `tobe chat`'s renderer leaves on a terminal's screen (a VT100 emulator) for a tool turn,
whatever order its streamed deltas and durable events arrive in, and for history."""

from __future__ import annotations

import io

import pytest
from helpers.screen import Terminal
from rich.console import Console

from face.chat.render import Renderer
from tobe.v1 import common_pb2, events_pb2

KEY = "p_chat"
RUN = "run_1"
CALL = "call_1"
FIRST, FINAL = "Let me check.", "Done: it is noon."
# The screen a tool turn leaves: each text once, the call and its result, no spinner.
TOOL_TURN = [
    FIRST,
    '⚙ current_time {"timezone": "UTC"}',
    '✓ current_time {"utc": "12:00"}',
    FINAL,
]


def _event(**payload: object) -> events_pb2.Event:
    return events_pb2.Event(conversation_key=KEY, **payload)  # type: ignore[arg-type]


def _delta(step: int, text: str, *, thinking: bool = False) -> events_pb2.Event:
    delta = events_pb2.TextDelta(run_id=RUN, step=step, text=text)
    return _event(thinking_delta=delta) if thinking else _event(text_delta=delta)


def _assistant(text: str, *calls: str) -> common_pb2.Message:
    return common_pb2.Message(
        role=common_pb2.MESSAGE_ROLE_ASSISTANT,
        run_id=RUN,
        text=text,
        tool_calls=[common_pb2.ToolCallRef(id=c, name="current_time") for c in calls],
    )


def _tool(status: common_pb2.ToolStatus.ValueType) -> common_pb2.ToolProjection:
    done = status != common_pb2.TOOL_STATUS_RUNNING
    return common_pb2.ToolProjection(
        tool_call_id=CALL,
        run_id=RUN,
        tool="current_time",
        status=status,
        arguments_json='{"timezone":"UTC"}',
        result_text='{"utc": "12:00"}' if done else "",
    )


def _run(state: common_pb2.RunState.ValueType) -> events_pb2.Event:
    return _event(run_changed=common_pb2.Run(id=RUN, state=state))


def _terminal() -> tuple[Terminal, Renderer]:
    terminal = Terminal(columns=100, rows=30)
    renderer = Renderer(Console(file=terminal, force_terminal=True, width=100, height=30))
    renderer.conversation = KEY
    return terminal, renderer


# The events of a turn with text and a tool call, then a final text, in the order the Mind
# commits them; ephemeral deltas may overtake durable events or trail them.
STARTED = _run(common_pb2.RUN_STATE_RUNNING)
STEP_0 = [_delta(0, "thinking…", thinking=True), _delta(0, "Let me "), _delta(0, "check.")]
MESSAGE_0 = _event(message_appended=_assistant(FIRST, CALL))
TOOL_RUNS = _event(tool_changed=_tool(common_pb2.TOOL_STATUS_RUNNING))
TOOL_ENDS = _event(tool_changed=_tool(common_pb2.TOOL_STATUS_SUCCEEDED))
STEP_1 = [_delta(1, "Done: "), _delta(1, "it is noon.")]
MESSAGE_1 = _event(message_appended=_assistant(FINAL))
COMPLETED = _run(common_pb2.RUN_STATE_COMPLETED)
ORDERS = {
    "as committed": [STARTED, *STEP_0, MESSAGE_0, TOOL_RUNS, TOOL_ENDS, *STEP_1, MESSAGE_1],
    # The next step streams before the tool's end arrives: the old renderer printed the final
    # text twice and left the spinner line behind.
    "next step overtakes the tool's end": [
        STARTED,
        *STEP_0,
        MESSAGE_0,
        TOOL_RUNS,
        *STEP_1,
        TOOL_ENDS,
        MESSAGE_1,
    ],
    "deltas trail their messages": [
        STARTED,
        MESSAGE_0,
        *STEP_0,
        TOOL_RUNS,
        TOOL_ENDS,
        MESSAGE_1,
        *STEP_1,
    ],
}


@pytest.mark.parametrize("order", ORDERS)
def test_a_tool_turn_shows_each_text_once_and_leaves_no_spinner(order: str) -> None:
    terminal, renderer = _terminal()
    for event in [*ORDERS[order], COMPLETED]:
        renderer.on_event(event)
    assert terminal.lines() == TOOL_TURN
    assert renderer.run_finished(RUN).is_set()


def test_a_running_tool_shows_its_spinner_and_progress_until_its_result_replaces_them() -> None:
    terminal, renderer = _terminal()
    for event in [STARTED, *STEP_0, MESSAGE_0, TOOL_RUNS]:
        renderer.on_event(event)
    progress = events_pb2.ToolProgress(
        run_id=RUN, tool_call_id=CALL, message="waited 1 of 3 s", fraction=0.33
    )
    renderer.on_event(_event(tool_progress=progress))
    assert terminal.lines()[-1].endswith("running current_time — waited 1 of 3 s 33%")
    for event in [TOOL_ENDS, MESSAGE_1, COMPLETED]:
        renderer.on_event(event)
    assert terminal.lines() == TOOL_TURN


def test_progress_is_one_line_each_when_output_is_piped() -> None:
    output = io.StringIO()
    renderer = Renderer(Console(file=output, width=100))
    renderer.conversation = KEY
    for event in [STARTED, MESSAGE_0, TOOL_RUNS]:
        renderer.on_event(event)
    progress = events_pb2.ToolProgress(
        run_id=RUN, tool_call_id=CALL, message="waited 1 of 3 s", fraction=-1
    )
    renderer.on_event(_event(tool_progress=progress))
    for event in [TOOL_ENDS, MESSAGE_1, COMPLETED]:
        renderer.on_event(event)
    lines = [line.rstrip() for line in output.getvalue().splitlines()]
    assert lines == [FIRST, TOOL_TURN[1], "  … waited 1 of 3 s", TOOL_TURN[2], FINAL]


def test_a_cancelled_run_keeps_what_streamed_and_says_it_was_cancelled() -> None:
    terminal, renderer = _terminal()
    for event in [STARTED, *STEP_0]:
        renderer.on_event(event)
    cancelled = common_pb2.Run(id=RUN, state=common_pb2.RUN_STATE_CANCELLED, reason="by alice")
    renderer.on_event(_event(run_changed=cancelled))
    assert terminal.lines() == [FIRST, "run cancelled: by alice"]


def test_history_shows_tool_calls_and_results_as_they_looked_live() -> None:
    terminal, renderer = _terminal()
    user = common_pb2.Message(role=common_pb2.MESSAGE_ROLE_USER, text="time?")
    result = common_pb2.Message(
        role=common_pb2.MESSAGE_ROLE_TOOL, tool_call_id=CALL, text='{"utc": "12:00"}'
    )
    renderer.show_history(
        [user, _assistant(FIRST, CALL), result, _assistant(FINAL)],
        [_tool(common_pb2.TOOL_STATUS_SUCCEEDED)],
    )
    assert terminal.lines() == ["you› time?", *TOOL_TURN]


def test_history_without_a_projection_shows_the_call_from_its_tool_message() -> None:
    terminal, renderer = _terminal()
    failed = common_pb2.Message(
        role=common_pb2.MESSAGE_ROLE_TOOL,
        tool_call_id=CALL,
        text="no such zone",
        is_error=True,
    )
    renderer.show_history([_assistant(FIRST, CALL), failed], [])
    assert terminal.lines() == [FIRST, "⚙ current_time", "✗ current_time no such zone"]


def _approval(key: str) -> common_pb2.Approval:
    return common_pb2.Approval(
        id="apr_1",
        conversation_key=key,
        run_id=RUN,
        tool_call_id=CALL,
        tool="shell",
        decision_text="run `rm -rf build`",
    )


def test_a_pending_approval_shows_what_is_decided_and_how_to_answer_without_a_spinner() -> None:
    terminal, renderer = _terminal()
    asked: list[common_pb2.Approval] = []
    renderer.on_approval_request = asked.append
    for event in [STARTED, MESSAGE_0, TOOL_RUNS]:
        renderer.on_event(event)
    renderer.on_event(_event(approval_changed=_approval(KEY)))
    assert terminal.lines()[-3:] == [
        "approval apr_1 shell — waiting for a decision",
        "  run `rm -rf build`",
        "  answer y = approve once, a = always in this conversation, n [reason] = deny",
    ]
    assert [a.id for a in asked] == ["apr_1"]
    renderer.live.resume()  # answered: the spinner of the running call comes back
    assert terminal.lines()[-1].endswith("running current_time")


def test_an_approval_elsewhere_says_which_conversation_to_switch_to() -> None:
    terminal, renderer = _terminal()
    asked: list[common_pb2.Approval] = []
    renderer.on_approval_request = asked.append
    renderer.on_event(
        events_pb2.Event(conversation_key="p_other", approval_changed=_approval("p_other"))
    )
    assert terminal.lines()[-1] == "  in p_other: /switch p_other to answer"
    assert asked == []


def test_an_action_waiting_elsewhere_is_one_line_naming_its_conversation() -> None:
    terminal, renderer = _terminal()
    action = common_pb2.PendingAction(
        id="act_1", title="heating off", state=common_pb2.PENDING_ACTION_STATE_PENDING
    )
    renderer.on_event(events_pb2.Event(conversation_key="p_other", action_changed=action))
    assert terminal.lines() == [
        "⏳ waiting for your confirmation: heating off [act_1] — /confirm, /decline or /amend "
        "(in p_other)"
    ]


def test_a_reply_taller_than_the_screen_streams_its_newest_lines_and_is_printed_once() -> None:
    terminal, renderer = _terminal()
    items = "\n".join(f"- item {n}" for n in range(1, 51))
    renderer.on_event(STARTED)
    renderer.on_event(_delta(0, items))  # the first delta draws at once
    shown = [line.strip() for line in terminal.screen.display if line.strip()]
    assert shown[-1] == "• item 50" and "• item 1" not in shown
    renderer.on_event(_event(message_appended=_assistant(items)))
    renderer.on_event(COMPLETED)
    assert [line.strip() for line in terminal.lines()] == [f"• item {n}" for n in range(1, 51)]


def test_a_step_that_stored_no_message_does_not_keep_the_next_steps_text_on_screen() -> None:
    # Step 0 overflowed the context and was retried: it streamed, but stored no message.
    terminal, renderer = _terminal()
    for event in [STARTED, _delta(0, "Let me"), _delta(1, "Done: "), _delta(1, "it is noon.")]:
        renderer.on_event(event)
    renderer.on_event(MESSAGE_1)
    assert terminal.lines() == [FINAL]
    renderer.on_event(_delta(1, " (late)"))
    renderer.on_event(COMPLETED)
    assert terminal.lines() == [FINAL]
