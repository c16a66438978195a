"""Compaction through a real Mind process, with the Scripted provider playing a model whose
context window is small: it reports prompt tokens and refuses, like a real provider, a request
that does not fit its window."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from helpers.mind_gateway import Gateway, ended_runs, payloads
from helpers.mind_process import MindProcess, running_mind
from helpers.store_backend import rows

from tobe.v1 import common_pb2, events_pb2, mind_pb2

pytestmark = pytest.mark.e2e

WINDOW = 4000
FILLER = "Please remember the details of this message for later. " * 12

SCRIPT = """
summaries:
  - {match: "SLOW", delay: 60}
  - {match: "ALPHA", delay: 4}
  - {match: "POISON", error: "the summariser is down", error_kind: unavailable}
runs:
  - match: "turn \\\\d+"
    steps:
      - tool_calls: [{name: current_time, arguments: {timezone: "UTC"}}]
      - expect: {last_role: tool}
        text: "Noted, and the time is known."
  - match: "wait a moment"
    steps:
      - tool_calls: [{name: wait, arguments: {seconds: 2}}]
      - text: "Waited."
"""


def _env() -> dict[str, str]:
    model = {"id": "tiny", "context_window": WINDOW, "max_output": 256}
    return {
        "TOBE_PROVIDER__MODEL": "tiny",
        "TOBE_PROVIDER__MODELS": json.dumps([model]),
        "TOBE_CONTEXT__RESERVE_TOKENS": "200",
    }


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script, **_env()) as process:
        yield process


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    client = Gateway.connect(mind)
    try:
        yield client
    finally:
        client.close()


def _key() -> str:
    return f"p_{uuid.uuid4().hex[:12]}"


def _turn(gateway: Gateway, key: str, text: str) -> list[events_pb2.Event]:
    """Send `text` and wait for its run to end; the events of that run."""
    start = gateway.head()
    sent = gateway.send(key, text, uuid.uuid4().hex)
    events = gateway.wait_runs_ended(start, {sent.run_id})
    return [e for e in events if e.conversation_key == key]


def _run_states(events: list[events_pb2.Event]) -> list[int]:
    return [r.state for r in payloads(events, "run_changed") if r.state != 1]


def _summaries(mind: MindProcess, key: str) -> list[tuple[int, int, str]]:
    return rows(
        mind.url,
        "SELECT generation, through_message_id, text FROM summaries "
        "WHERE conversation_key = ? ORDER BY generation",
        key,
    )


def test_a_conversation_far_past_the_window_keeps_answering_within_budget(gateway: Gateway):
    key = gateway.create(_key())
    for turn in range(30):
        events = _turn(gateway, key, f"turn {turn}: {FILLER}")
        assert _run_states(events) == [common_pb2.RUN_STATE_COMPLETED], events[-1]

    everything, _ = gateway.replay(0)
    mine = [e for e in everything if e.conversation_key == key]
    compactions = payloads(mine, "context_compacted")
    assert len(compactions) >= 2, "30 turns of ~300 tokens need several summaries"
    # Over the window, the model would have refused the request: no compaction was forced.
    assert {c.trigger for c in compactions} == {events_pb2.COMPACTION_TRIGGER_BUDGET}
    assert [c.generation for c in compactions] == list(range(1, len(compactions) + 1))
    assert all(c.tokens_after < c.tokens_before for c in compactions)

    history = gateway.history(key).messages
    appended = payloads(mine, "message_appended")
    assert [m.id for m in history] == [m.id for m in appended], "every message is still stored"
    assert sum(m.role == common_pb2.MESSAGE_ROLE_USER for m in history) == 30
    by_id = {m.id: index for index, m in enumerate(history)}
    for compaction in compactions:
        after = history[by_id[compaction.through_message_id] + 1]
        assert after.role != common_pb2.MESSAGE_ROLE_TOOL, "a summary split a tool batch"
    assert history[-1].text == "Noted, and the time is known."


def _compaction_started(mind: MindProcess, key: str) -> bool:
    return any(f"compacting {key}:" in line for line in mind.output)


def _drive_until_compacting(mind: MindProcess, gateway: Gateway, key: str) -> str:
    """Send turns until a compaction of `key` starts; the id of the run it runs in."""
    start = gateway.head()
    for turn in range(1, 40):
        run_id = gateway.send(key, f"turn {turn}: {FILLER}", uuid.uuid4().hex).run_id
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if _compaction_started(mind, key):
                return run_id
            if run_id in ended_runs(gateway.replay(start)[0]):
                break
            time.sleep(0.05)
    pytest.fail(f"no compaction of {key} started")


def test_kill_9_during_compaction_leaves_the_old_context_and_a_usable_conversation(
    mind: MindProcess, gateway: Gateway, tmp_path: Path
):
    key = gateway.create(_key())
    _turn(gateway, key, f"turn 0: SLOW {FILLER}")
    _drive_until_compacting(mind, gateway, key)
    mind.kill()
    gateway.close()
    assert _summaries(mind, key) == [], "a summary was committed by a compaction that never ended"

    quick = tmp_path / "quick.yaml"
    quick.write_text(SCRIPT.replace('  - {match: "SLOW", delay: 60}\n', ""))
    mind.env["TOBE_PROVIDER__SCRIPT"] = str(quick)
    mind.start()
    gateway = Gateway.connect(mind)
    try:
        events = _turn(gateway, key, f"turn 99: {FILLER}")
        assert _run_states(events) == [common_pb2.RUN_STATE_COMPLETED]
        compactions = payloads(events, "context_compacted")
        assert [c.generation for c in compactions] == [1]
        stored = _summaries(mind, key)
        assert [(g, t) for g, t, _ in stored] == [(1, compactions[0].through_message_id)]
        assert "turn 0: SLOW" in stored[0][2], "the new summary covers the oldest messages"
    finally:
        gateway.close()


def test_compacting_one_conversation_does_not_delay_another_conversations_run(
    mind: MindProcess, gateway: Gateway
):
    slow, other = gateway.create(_key()), gateway.create(_key())
    _turn(gateway, slow, f"turn 0: ALPHA {FILLER}")
    compacting_run = _drive_until_compacting(mind, gateway, slow)
    start = gateway.head()
    other_run = gateway.send(other, f"turn 1: {FILLER}", uuid.uuid4().hex).run_id
    events = gateway.wait_for(start, lambda evs: {compacting_run, other_run} <= ended_runs(evs))
    marks = [
        "compacted" if e.WhichOneof("payload") == "context_compacted" else e.run_changed.id
        for e in events
        if e.WhichOneof("payload") == "context_compacted"
        or (e.WhichOneof("payload") == "run_changed" and e.run_changed.state != 1)
    ]
    assert marks.index(other_run) < marks.index("compacted") < marks.index(compacting_run)


def test_a_requested_compaction_waits_for_the_active_run_of_its_conversation(gateway: Gateway):
    key = gateway.create(_key())
    for turn in range(3):
        _turn(gateway, key, f"turn {turn}: short")
    start = gateway.head()
    running = gateway.send(key, "wait a moment", uuid.uuid4().hex).run_id
    request = mind_pb2.CompactConversationRequest(
        on_behalf_of=gateway.who("alice"), conversation_key=key
    )
    answer = gateway.stub.CompactConversation(request, metadata=gateway.md, timeout=60)

    assert answer.compaction.trigger == events_pb2.COMPACTION_TRIGGER_REQUESTED
    assert answer.compaction.generation == 1 and answer.compaction.run_id == ""
    events = gateway.wait_for(
        start, lambda evs: bool(payloads(evs, "context_compacted")) and running in ended_runs(evs)
    )
    marks = [
        "compacted" if e.WhichOneof("payload") == "context_compacted" else e.run_changed.id
        for e in events
        if e.conversation_key == key
        and (
            e.WhichOneof("payload") == "context_compacted"
            or (e.WhichOneof("payload") == "run_changed" and e.run_changed.state != 1)
        )
    ]
    assert marks == [running, "compacted"], "the compaction ran after the run, not within it"
    assert payloads(events, "context_compacted")[0] == answer.compaction


def test_a_failed_compaction_changes_nothing_says_why_and_leaves_the_conversation_usable(
    mind: MindProcess, gateway: Gateway
):
    key = gateway.create(_key())
    for turn in range(3):
        _turn(gateway, key, f"turn {turn}: POISON short")
    request = mind_pb2.CompactConversationRequest(
        on_behalf_of=gateway.who("alice"), conversation_key=key
    )
    with pytest.raises(grpc.RpcError) as refused:
        gateway.stub.CompactConversation(request, metadata=gateway.md, timeout=60)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "the summariser is down" in refused.value.details()
    assert _summaries(mind, key) == []
    assert _run_states(_turn(gateway, key, "turn 3: short")) == [common_pb2.RUN_STATE_COMPLETED]

    for turn in range(4, 40):
        events = _turn(gateway, key, f"turn {turn}: {FILLER}")
        ended = [r for r in payloads(events, "run_changed") if r.state != 1][-1]
        if ended.state != common_pb2.RUN_STATE_COMPLETED:
            break
    else:
        pytest.fail("the conversation never went over its budget")
    assert ended.state == common_pb2.RUN_STATE_FAILED
    assert "over budget" in ended.reason and "the summariser is down" in ended.reason
    assert _summaries(mind, key) == []
    history = gateway.history(key).messages
    assert sum(m.role == common_pb2.MESSAGE_ROLE_USER for m in history) == turn + 1
