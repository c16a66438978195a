"""Messages into a real Mind: idempotent sends, follow-ups, steering, many conversations."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers.mind_gateway import Gateway, ended_runs, payloads

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e


def _key(prefix: str = "p") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def test_a_retried_send_creates_one_message_and_one_run(shared: Gateway):
    key = shared.create(_key())
    start = shared.head()
    first = shared.send(key, "time for once", "same-key")
    # The connection drops; the client retries on a new one with the same key.
    retry_client = Gateway.connect(shared.mind)
    try:
        retry = retry_client.send(key, "time for once", "same-key")
    finally:
        retry_client.close()
    assert retry.duplicate and not first.duplicate
    assert (retry.message_id, retry.run_id, retry.input_id) == (
        first.message_id,
        first.run_id,
        first.input_id,
    )
    events = shared.wait_runs_ended(start, {first.run_id})
    shared.send(key, "time for once", "same-key")  # and once more after the run ended
    users = [m for m in shared.history(key).messages if m.role == common_pb2.MESSAGE_ROLE_USER]
    assert [m.id for m in users] == [first.message_id]
    runs = {r.id for r in payloads(events, "run_changed") if r.conversation_key == key}
    assert runs == {first.run_id}


def test_messages_sent_during_a_run_are_follow_ups_handled_in_order(shared: Gateway):
    key = shared.create(_key())
    start = shared.head()
    first = shared.send(key, "pause", "k1")
    second = shared.send(key, "follow-up one", "k2")
    third = shared.send(key, "follow-up two", "k3")
    assert second.queued and third.queued and not second.run_id and not third.run_id
    assert second.message_id == 0 and second.input_id < third.input_id
    snapshot = shared.snapshot(key)
    assert snapshot.active_run.id == first.run_id
    assert snapshot.active_run.state == common_pb2.RUN_STATE_RUNNING
    assert [(q.text, q.input_id) for q in snapshot.queued] == [
        ("follow-up one", second.input_id),
        ("follow-up two", third.input_id),
    ]

    def all_done(events) -> bool:
        runs = [r for r in payloads(events, "run_changed") if r.conversation_key == key]
        ended = [r for r in runs if r.state != common_pb2.RUN_STATE_RUNNING]
        return len(ended) == 3

    events = [e for e in shared.wait_for(start, all_done) if e.conversation_key == key]
    queued = payloads(events, "message_queued")
    assert [q.text for q in queued] == ["follow-up one", "follow-up two"]
    assert all(not q.steer and q.run_id == first.run_id for q in queued)

    messages = shared.history(key).messages
    assert [(m.role, m.text) for m in messages] == [
        (common_pb2.MESSAGE_ROLE_USER, "pause"),
        (common_pb2.MESSAGE_ROLE_ASSISTANT, "paused"),
        (common_pb2.MESSAGE_ROLE_USER, "follow-up one"),
        (common_pb2.MESSAGE_ROLE_ASSISTANT, "echo"),
        (common_pb2.MESSAGE_ROLE_USER, "follow-up two"),
        (common_pb2.MESSAGE_ROLE_ASSISTANT, "echo"),
    ]
    run_ids = [messages[i].run_id for i in (0, 2, 4)]
    assert len(set(run_ids)) == 3 and run_ids[0] == first.run_id
    triggers = {r.id: r.trigger for r in payloads(events, "run_changed")}
    assert [triggers[r] for r in run_ids] == ["user", "followup", "followup"]
    assert [m.idempotency_key for m in messages if m.role == common_pb2.MESSAGE_ROLE_USER] == [
        "k1",
        "k2",
        "k3",
    ]


def test_a_steering_message_skips_the_queued_calls_and_reaches_the_running_run(shared: Gateway):
    key = shared.create(_key())
    start = shared.head()
    first = shared.send(key, "short-wait", "k1")
    shared.wait_for(
        start,
        lambda evs: any(
            e.conversation_key == key and e.WhichOneof("payload") == "tool_changed" for e in evs
        ),
    )
    steer = shared.send(key, "change of plan", "k2", steer=True)
    assert steer.queued and steer.run_id == first.run_id

    events = [e for e in shared.wait_runs_ended(start, {first.run_id}) if e.conversation_key == key]
    assert payloads(events, "run_changed")[-1].state == common_pb2.RUN_STATE_COMPLETED
    statuses = {p.tool: p.status for p in payloads(events, "tool_changed")}
    assert statuses == {
        "wait": common_pb2.TOOL_STATUS_SUCCEEDED,
        "current_time": common_pb2.TOOL_STATUS_SKIPPED,
    }
    messages = shared.history(key).messages
    assert [(m.role, m.run_id == first.run_id) for m in messages] == [
        (common_pb2.MESSAGE_ROLE_USER, True),
        (common_pb2.MESSAGE_ROLE_ASSISTANT, True),
        (common_pb2.MESSAGE_ROLE_TOOL, True),
        (common_pb2.MESSAGE_ROLE_TOOL, True),
        (common_pb2.MESSAGE_ROLE_USER, True),
        (common_pb2.MESSAGE_ROLE_ASSISTANT, True),
    ]
    assert messages[3].is_error and messages[4].text == "change of plan"
    assert messages[5].text == "Understood."


def test_fifty_conversations_at_once_keep_per_conversation_order(shared: Gateway):
    keys = [shared.create(_key()) for _ in range(50)]
    start = shared.head()

    def drive(key: str) -> list[str]:
        first = shared.send(key, "time in parallel", f"{key}-1")
        second = shared.send(key, f"second for {key}", f"{key}-2")
        return [first.run_id, second.run_id]

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(drive, keys))

    def finished(events) -> bool:
        ended = ended_runs(events)
        started = {r.id for r in payloads(events, "run_changed")}
        return len(started) >= 100 and started <= ended

    events = shared.wait_for(start, finished, timeout=120)
    ids = [e.durable_id for e in events]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    for key in keys:
        messages = shared.history(key).messages
        assert [m.role for m in messages] == [
            common_pb2.MESSAGE_ROLE_USER,
            common_pb2.MESSAGE_ROLE_ASSISTANT,
            common_pb2.MESSAGE_ROLE_TOOL,
            common_pb2.MESSAGE_ROLE_ASSISTANT,
            common_pb2.MESSAGE_ROLE_USER,
            common_pb2.MESSAGE_ROLE_ASSISTANT,
        ], key
        assert messages[0].text == "time in parallel"
        assert messages[4].text == f"second for {key}"
        assert messages[3].text == "Done: here is the time."
        assert messages[2].tool_call_id == messages[1].tool_calls[0].id
