"""A tool-calling turn through a real Mind process, driven over gRPC with the Scripted provider."""

from __future__ import annotations

import json
import uuid

import pytest
from helpers.mind_gateway import SUMMARY, TRANSPARENT, Gateway, ended_runs, payloads

from tobe.v1 import common_pb2, mind_pb2

pytestmark = pytest.mark.e2e


def _key() -> str:
    return f"p_{uuid.uuid4().hex[:12]}"


def test_two_step_tool_turn_stores_messages_projections_and_events_in_order(shared: Gateway):
    key = shared.create(_key())
    start = shared.head()
    sent = shared.send(key, "time please", "k1")
    assert sent.message_id > 0 and sent.run_id and not sent.queued

    events = shared.wait_runs_ended(start, {sent.run_id})
    mine = [e for e in events if e.conversation_key == key]
    kinds = [e.WhichOneof("payload") for e in mine]
    assert kinds == [
        "run_changed",  # running
        "message_appended",  # user
        "message_appended",  # assistant with the tool call
        "tool_changed",  # admitted
        "tool_changed",  # terminal
        "message_appended",  # tool result
        "message_appended",  # final answer
        "run_changed",  # completed
    ]
    ids = [e.durable_id for e in mine]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(e.audience == ["alice"] for e in mine)

    first_run, last_run = mine[0].run_changed, mine[-1].run_changed
    assert first_run.state == common_pb2.RUN_STATE_RUNNING
    assert last_run.state == common_pb2.RUN_STATE_COMPLETED and last_run.id == sent.run_id
    user, assistant, result, answer = payloads(mine, "message_appended")
    assert user.role == common_pb2.MESSAGE_ROLE_USER
    assert (user.text, user.id) == ("time please", sent.message_id)
    assert assistant.role == common_pb2.MESSAGE_ROLE_ASSISTANT
    assert [c.name for c in assistant.tool_calls] == ["current_time"]
    call_id = assistant.tool_calls[0].id
    assert call_id.startswith("call_") and len(call_id) == 37
    assert result.role == common_pb2.MESSAGE_ROLE_TOOL and result.tool_call_id == call_id
    assert json.loads(result.text)["timezone"] == "UTC"
    assert answer.text == "Done: here is the time."
    admitted, terminal = payloads(mine, "tool_changed")
    assert admitted.status == common_pb2.TOOL_STATUS_RUNNING and admitted.tool_call_id == call_id
    assert terminal.status == common_pb2.TOOL_STATUS_SUCCEEDED
    assert json.loads(terminal.arguments_json) == {"timezone": "UTC"}
    assert terminal.admitted_mode == TRANSPARENT

    history = shared.history(key)
    assert [m.id for m in history.messages] == [user.id, assistant.id, result.id, answer.id]
    assert [t.tool_call_id for t in history.tools] == [call_id]
    snapshot = shared.snapshot(key)
    assert not snapshot.HasField("active_run")
    assert snapshot.last_event_id >= mine[-1].durable_id


def test_text_and_thinking_deltas_arrive_live_before_the_durable_message(shared: Gateway):
    key = shared.create(_key())
    listener = shared.listen(shared.head(), include_ephemeral=True)
    try:
        sent = shared.send(key, "time again", "k1")
        events = listener.wait(lambda evs: sent.run_id in ended_runs(evs))
    finally:
        listener.close()
    mine = [e for e in events if e.conversation_key == key]
    kinds = [e.WhichOneof("payload") for e in mine]
    deltas = [e.text_delta for e in mine if e.WhichOneof("payload") == "text_delta"]
    assert [d.text for d in deltas if d.step == 0] == ["Let me ", "check."]  # chunks: 2
    assert "".join(d.text for d in deltas if d.step == 1) == "Done: here is the time."
    assert all(d.run_id == sent.run_id for d in deltas)
    assert "thinking_delta" in kinds
    assert all(e.durable_id == 0 for e in mine if e.WhichOneof("payload").endswith("_delta"))
    assert all(e.durable_id > 0 for e in mine if not e.WhichOneof("payload").endswith("_delta"))


def test_summary_admission_never_yields_raw_arguments_or_results(shared: Gateway):
    key = shared.create(_key())
    start = shared.head()
    sent = shared.send(key, "time in summary", "k1", mode=SUMMARY)
    events = [e for e in shared.wait_runs_ended(start, {sent.run_id}) if e.conversation_key == key]
    for projection in payloads(events, "tool_changed"):
        assert projection.admitted_mode == SUMMARY
        assert projection.arguments_json == "" and projection.result_text == ""
        assert projection.arguments_summary == "timezone=<3 chars>"
    tool_message = [m for m in payloads(events, "message_appended") if m.tool_call_id][0]
    assert "utc" not in tool_message.text and tool_message.text == tool_message.result_summary

    # Even a transparent viewer gets the summary of a summary admission.
    history = shared.history(key, mode=TRANSPARENT)
    raw = [m for m in history.messages if m.role == common_pb2.MESSAGE_ROLE_TOOL][0]
    assert raw.text.startswith("succeeded, ") and "utc" not in raw.text
    assert all(t.arguments_json == "" and t.result_text == "" for t in history.tools)
    assert all(t.shown_mode == SUMMARY for t in history.tools)


def test_transparent_admission_is_downgraded_for_a_summary_viewer(shared: Gateway):
    key = shared.create(_key())
    start = shared.head()
    sent = shared.send(key, "time transparent", "k1", mode=TRANSPARENT)
    shared.wait_runs_ended(start, {sent.run_id})
    history = shared.history(key, mode=SUMMARY)
    tool = [m for m in history.messages if m.role == common_pb2.MESSAGE_ROLE_TOOL][0]
    assert tool.text == tool.result_summary
    assert history.tools[0].admitted_mode == TRANSPARENT
    assert history.tools[0].shown_mode == SUMMARY and history.tools[0].arguments_json == ""


def test_arguments_failing_the_schema_reach_the_model_as_an_error_and_nothing_runs(
    shared: Gateway,
):
    key = shared.create(_key())
    start = shared.head()
    sent = shared.send(key, "bad-args", "k1")
    events = shared.wait_runs_ended(start, {sent.run_id}, include_ephemeral=True)
    mine = [e for e in events if e.conversation_key == key]
    assert not [e for e in mine if e.WhichOneof("payload") == "tool_progress"]
    terminal = payloads(mine, "tool_changed")[-1]
    assert terminal.status == common_pb2.TOOL_STATUS_FAILED
    result = [m for m in payloads(mine, "message_appended") if m.tool_call_id][0]
    assert result.is_error and "do not match the schema of wait" in result.text
    assert "waited_seconds" not in result.text
    assert payloads(mine, "run_changed")[-1].state == common_pb2.RUN_STATE_COMPLETED
    assert payloads(mine, "message_appended")[-1].text == "I called the tool wrongly."


def test_unparseable_tool_arguments_are_answered_as_a_tool_error(shared: Gateway):
    key = shared.create(_key())
    start = shared.head()
    sent = shared.send(key, "bad-json", "k1")
    events = [e for e in shared.wait_runs_ended(start, {sent.run_id}) if e.conversation_key == key]
    result = [m for m in payloads(events, "message_appended") if m.tool_call_id][0]
    assert result.is_error and "not valid JSON" in result.text
    assert payloads(events, "run_changed")[-1].state == common_pb2.RUN_STATE_COMPLETED


def test_cancel_stops_a_running_tool_and_records_the_run_cancelled(shared: Gateway):
    key = shared.create(_key())
    start = shared.head()
    sent = shared.send(key, "slow-tool", "k1")
    shared.wait_for(
        start,
        lambda evs: any(
            e.conversation_key == key and e.WhichOneof("payload") == "tool_changed" for e in evs
        ),
    )
    request = mind_pb2.CancelRunRequest(on_behalf_of=shared.who("alice"), conversation_key=key)
    cancel = shared.stub.CancelRun(request, metadata=shared.md, timeout=10)
    assert cancel.run_id == sent.run_id
    events = [e for e in shared.wait_runs_ended(start, {sent.run_id}) if e.conversation_key == key]
    statuses = {p.tool: p.status for p in payloads(events, "tool_changed")}
    assert statuses == {
        "wait": common_pb2.TOOL_STATUS_CANCELLED,
        "current_time": common_pb2.TOOL_STATUS_SKIPPED,
    }
    run = payloads(events, "run_changed")[-1]
    assert run.state == common_pb2.RUN_STATE_CANCELLED and run.id in ended_runs(events)
