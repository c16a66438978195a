"""`kill -9` of the Mind at several points of a run, then a restart on the same store."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from helpers.mind_gateway import Gateway, ended_runs, payloads
from helpers.mind_process import MindProcess

from tobe.v1 import common_pb2, events_pb2

pytestmark = pytest.mark.e2e

TOOL_TERMINALS = {
    common_pb2.TOOL_STATUS_SUCCEEDED,
    common_pb2.TOOL_STATUS_FAILED,
    common_pb2.TOOL_STATUS_DENIED,
    common_pb2.TOOL_STATUS_SKIPPED,
    common_pb2.TOOL_STATUS_CANCELLED,
}


def _has(key: str, kind: str, check=lambda p: True):
    def done(events: list[events_pb2.Event]) -> bool:
        return any(
            e.conversation_key == key
            and e.WhichOneof("payload") == kind
            and check(getattr(e, kind))
            for e in events
        )

    return done


def _restart_and_check_invariants(
    mind: MindProcess, gateway: Gateway, key: str, acknowledged: list[int], last_seen: int
) -> tuple[Gateway, list[events_pb2.Event]]:
    """Kill -9, restart, and check what must hold whatever the crash point was."""
    mind.kill()
    gateway.close()
    mind.start()
    gateway = Gateway.connect(mind)

    history = gateway.history(key)
    stored = {m.id for m in history.messages}
    assert set(acknowledged) <= stored, "an acknowledged message was lost"

    everything, head = gateway.replay(0)
    terminals = Counter(
        e.tool_changed.tool_call_id
        for e in everything
        if e.WhichOneof("payload") == "tool_changed" and e.tool_changed.status in TOOL_TERMINALS
    )
    assert all(count == 1 for count in terminals.values()), terminals
    run_terminals = Counter(
        e.run_changed.id
        for e in everything
        if e.WhichOneof("payload") == "run_changed"
        and e.run_changed.state != common_pb2.RUN_STATE_RUNNING
    )
    assert all(count == 1 for count in run_terminals.values()), run_terminals

    # Later runs may still be writing: the resumed stream must extend the full replay exactly.
    resumed, _ = gateway.replay(last_seen)
    expected = [e.durable_id for e in everything if e.durable_id > last_seen]
    resumed_ids = [e.durable_id for e in resumed]
    assert resumed_ids[: len(expected)] == expected, "resume must see each later event once"
    assert resumed_ids == sorted(set(resumed_ids))
    assert [e.SerializeToString() for e in resumed[: len(expected)]] == [
        e.SerializeToString() for e in everything if e.durable_id > last_seen
    ]
    assert head >= last_seen
    return gateway, everything


def _run_state(events: list[events_pb2.Event], run_id: str) -> int:
    return [r.state for r in payloads(events, "run_changed") if r.id == run_id][-1]


def test_kill_before_the_assistant_message_is_stored(mind: MindProcess, gateway: Gateway):
    key = gateway.create(f"p_{uuid.uuid4().hex[:8]}")
    start = gateway.head()
    sent = gateway.send(key, "slow-model", "k1")
    queued = gateway.send(key, "after the crash", "k2")
    assert queued.queued
    seen = gateway.wait_for(start, _has(key, "message_queued"))
    last_seen = seen[-1].durable_id

    gateway, everything = _restart_and_check_invariants(
        mind, gateway, key, [sent.message_id], last_seen
    )
    assert _run_state(everything, sent.run_id) == common_pb2.RUN_STATE_INTERRUPTED
    interrupted = [r for r in payloads(everything, "run_changed") if r.id == sent.run_id][-1]
    assert "interrupted" in interrupted.reason
    roles = [m.role for m in gateway.history(key).messages if m.run_id == sent.run_id]
    assert roles == [common_pb2.MESSAGE_ROLE_USER]

    # The queued follow-up is picked up again after the restart and answered.
    events = gateway.wait_for(0, _has(key, "message_appended", lambda m: m.text == "echo"))
    followup_run = [
        m.run_id for m in payloads(events, "message_appended") if m.text == "after the crash"
    ][0]
    gateway.wait_runs_ended(0, {followup_run})
    gateway.close()


@pytest.mark.pg_e2e
def test_kill_during_a_tool_execution(mind: MindProcess, gateway: Gateway):
    key = gateway.create(f"p_{uuid.uuid4().hex[:8]}")
    start = gateway.head()
    sent = gateway.send(key, "slow-tool", "k1")
    seen = gateway.wait_for(
        start, _has(key, "tool_changed", lambda p: p.status == common_pb2.TOOL_STATUS_RUNNING)
    )
    last_seen = seen[-1].durable_id

    gateway, everything = _restart_and_check_invariants(
        mind, gateway, key, [sent.message_id], last_seen
    )
    assert _run_state(everything, sent.run_id) == common_pb2.RUN_STATE_INTERRUPTED
    wait_call = [p for p in payloads(everything, "tool_changed") if p.tool == "wait"]
    assert [p.status for p in wait_call] == [
        common_pb2.TOOL_STATUS_RUNNING,
        common_pb2.TOOL_STATUS_CANCELLED,
    ]
    # The conversation goes on: the next run sees the interrupted call answered as not run.
    after = gateway.head()
    nxt = gateway.send(key, "time now", "k2")
    events = gateway.wait_runs_ended(after, {nxt.run_id})
    assert _run_state(events, nxt.run_id) == common_pb2.RUN_STATE_COMPLETED
    gateway.close()


def test_kill_after_the_terminal_changes_nothing(mind: MindProcess, gateway: Gateway):
    key = gateway.create(f"p_{uuid.uuid4().hex[:8]}")
    start = gateway.head()
    sent = gateway.send(key, "time", "k1")
    seen = gateway.wait_runs_ended(start, {sent.run_id})
    last_seen = seen[-1].durable_id
    before = [m.id for m in gateway.history(key).messages]

    gateway, everything = _restart_and_check_invariants(mind, gateway, key, before, last_seen)
    assert _run_state(everything, sent.run_id) == common_pb2.RUN_STATE_COMPLETED
    assert [m.id for m in gateway.history(key).messages] == before
    assert [e for e in everything if e.durable_id > last_seen] == []
    assert sent.run_id in ended_runs(everything)
    gateway.close()


def test_sigterm_records_the_active_run_as_interrupted_and_exits_cleanly(
    mind: MindProcess, gateway: Gateway
):
    key = gateway.create(f"p_{uuid.uuid4().hex[:8]}")
    start = gateway.head()
    sent = gateway.send(key, "slow-model", "k1")
    gateway.wait_for(start, _has(key, "message_appended"))
    gateway.close()
    assert mind.terminate() == 0

    mind.start()
    gateway = Gateway.connect(mind)
    everything, _ = gateway.replay(0)
    runs = [r for r in payloads(everything, "run_changed") if r.id == sent.run_id]
    assert [r.state for r in runs] == [
        common_pb2.RUN_STATE_RUNNING,
        common_pb2.RUN_STATE_INTERRUPTED,
    ]
    assert runs[-1].reason == "interrupted: the Mind shut down"
    gateway.close()
