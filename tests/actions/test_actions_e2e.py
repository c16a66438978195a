"""The decision layer through a real Mind (Scripted model, `[actions] enabled`): what ordinary
chat is offered, an immediate action executing, a confirmation-required action waiting and
then confirmed, cancelled or amended, and a malformed answer handled as plain chat."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from helpers.admin_cli import Admin
from helpers.clock_file import set_clock
from helpers.eventually import eventually
from helpers.mind_gateway import Gateway, ended_runs, payloads
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import common_pb2, events_pb2, mind_pb2

pytestmark = pytest.mark.e2e

WRITES = ["memory_write", "memory_delete"]
WAITS = "waiting for the owner's confirmation"


def _tendency(goal: str, evidence: str) -> dict[str, Any]:
    return {"tendencies": [{"goal": goal, "evidence": evidence}], "pending": []}


def _confirm(title: str) -> dict[str, Any]:
    return {
        "verdict": "confirm",
        "timing": "immediate",
        "reason": "it changes what the assistant keeps",
        "title": title,
        "actions": ["memory_write"],
    }


WRITE_PLAN = {"steps": [{"order": 1, "action": "memory_write", "purpose": "keep it", "after": []}]}


def _write(key: str, text: str) -> dict[str, Any]:
    return {"name": "memory_write", "arguments": {"key": key, "text": text}}


SCRIPT = {
    "decisions": [
        {
            "stage": "extract",
            "match": "remember that I live in Lyon",
            "answers": [_tendency("Remember that the owner lives in Lyon", "I live in Lyon")],
        },
        {
            "stage": "evaluate",
            "match": "owner lives in Lyon",
            "answers": [
                {
                    "verdict": "immediate",
                    "reason": "the owner asked",
                    "title": "Remember the city",
                    "actions": ["memory_write"],
                }
            ],
        },
        {"stage": "plan", "match": "title: Remember the city", "answers": [WRITE_PLAN]},
        {
            "stage": "extract",
            "match": "remember my diet",
            "answers": [_tendency("Remember the owner's diet", "remember my diet")],
        },
        {"stage": "evaluate", "match": "amended: vegan", "answers": [_confirm("Remember vegan")]},
        {"stage": "evaluate", "match": "owner's diet", "answers": [_confirm("Remember the diet")]},
        {"stage": "plan", "match": "title: Remember", "answers": [WRITE_PLAN]},
        {
            "stage": "extract",
            "match": "malformed please",
            "answers": ["Sure, here is JSON: {", {"tendencies": "none", "pending": []}],
        },
    ],
    "runs": [
        {
            "match": "^what is a tide",
            "steps": [
                {
                    "expect": {"tools_include": ["memory_read"], "tools_exclude": WRITES},
                    "text": "The moon pulls the sea.",
                }
            ],
        },
        {
            "match": "^remember that I live in Lyon",
            "steps": [
                {
                    "expect": {
                        "tools_include": ["memory_write"],
                        "tools_exclude": ["memory_delete"],
                        "request_contains": ["executing now, in this order: 1. memory_write"],
                    },
                    "tool_calls": [_write("city", "Lyon")],
                },
                {"expect": {"last_role": "tool", "last_is_error": False}, "text": "Kept."},
            ],
        },
        {
            "match": "^remember my diet",
            "steps": [
                {
                    "expect": {"tools_exclude": WRITES, "request_contains": [WAITS]},
                    "text": "Please confirm first.",
                }
            ],
        },
        {
            "match": "Confirmed: Remember the diet",
            "steps": [
                {
                    "expect": {"tools_include": ["memory_write"]},
                    "tool_calls": [_write("diet", "veg")],
                },
                {"expect": {"last_role": "tool", "last_is_error": False}, "text": "Kept."},
            ],
        },
        {
            "match": "Amended: Remember the diet",
            "steps": [
                {
                    "expect": {"tools_exclude": WRITES, "request_contains": [WAITS]},
                    "text": "The amended action waits for you.",
                }
            ],
        },
        {
            "match": "^malformed please",
            "steps": [{"expect": {"tools_exclude": WRITES}, "text": "A plain answer."}],
        },
    ],
}


@pytest.fixture(scope="module")
def mind() -> Iterator[MindProcess]:
    # Short, so the Management socket's path stays below the Unix limit.
    root = Path(tempfile.mkdtemp(prefix="tact-"))
    script = root / "script.yaml"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")  # JSON is YAML
    try:
        with running_mind(root, script=script, TOBE_ACTIONS__ENABLED="true") as process:
            yield process
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    client = Gateway.connect(mind)
    try:
        yield client
    finally:
        client.close()


def _completed(events: list[events_pb2.Event], run_id: str) -> None:
    ended = [r for r in payloads(events, "run_changed") if r.id == run_id][-1]
    assert (ended.state, ended.reason) == (common_pb2.RUN_STATE_COMPLETED, ""), ended.reason


def chat(gateway: Gateway, key: str, text: str) -> list[events_pb2.Event]:
    """Send `text`; the events from the send until its run completed."""
    after = gateway.head()
    sent = gateway.send(key, text, f"{key}-{text}")
    events = gateway.wait_runs_ended(after, {sent.run_id})
    _completed(events, sent.run_id)
    return events


def decide(
    gateway: Gateway, action_id: str, decision: int, idem: str, amendment: str = "", who="alice"
) -> mind_pb2.DecideActionResponse:
    request = mind_pb2.DecideActionRequest(
        on_behalf_of=gateway.who(who),
        action_id=action_id,
        decision=decision,
        amendment=amendment,
        idempotency_key=idem,
    )
    return gateway.stub.DecideAction(request, metadata=gateway.md, timeout=10)


def notes(gateway: Gateway, key: str) -> list[str]:
    messages = gateway.snapshot(key).messages
    return [m.text for m in messages if m.role == common_pb2.MESSAGE_ROLE_NOTE]


def actions_changed(events: list[events_pb2.Event]) -> list[tuple[str, int]]:
    return [(a.title, a.state) for a in payloads(events, "action_changed")]


def memory(gateway: Gateway, key: str) -> dict[str, str]:
    request = mind_pb2.ListMemoryRequest(on_behalf_of=gateway.who("alice"), conversation_key=key)
    listed = gateway.stub.ListMemory(request, metadata=gateway.md, timeout=10)
    return {entry.key: entry.text for entry in listed.entries}


def waiting(gateway: Gateway, key: str, text: str) -> common_pb2.PendingAction:
    """Send `text` (a confirmation-required action) and return the action it left waiting,
    as the snapshot and the `action_changed` event show it."""
    events = chat(gateway, key, text)
    assert actions_changed(events) == [
        ("Remember the diet", common_pb2.PENDING_ACTION_STATE_PENDING)
    ]
    (action,) = gateway.snapshot(key).pending_actions
    assert action == payloads(events, "action_changed")[0]
    assert action.timing == common_pb2.ACTION_TIMING_IMMEDIATE
    assert [(s.order, s.action) for s in action.plan] == [(1, "memory_write")]
    assert any(f"{WAITS} as {action.id}" in note for note in notes(gateway, key))
    assert memory(gateway, key) == {}
    return action


def test_ordinary_chat_is_offered_only_read_only_tools_and_leaves_no_note(gateway: Gateway):
    key = gateway.create("p_tides")
    events = chat(gateway, key, "what is a tide?")
    assert notes(gateway, key) == [] and actions_changed(events) == []


def test_an_immediate_action_is_offered_its_plans_tool_and_calls_it(gateway: Gateway):
    key = gateway.create("p_city")
    events = chat(gateway, key, "remember that I live in Lyon")
    assert memory(gateway, key) == {"city": "Lyon"}
    assert [t.tool for t in payloads(events, "tool_changed")][-1] == "memory_write"
    (note,) = notes(gateway, key)
    assert "Remember the city" in note and "executing now" in note


def test_a_waiting_action_is_confirmed_once_and_its_run_executes_the_plan(gateway: Gateway):
    key = gateway.create("g_confirm", members=("bob",))
    action = waiting(gateway, key, "remember my diet, then confirm")
    with pytest.raises(grpc.RpcError) as member:
        decide(gateway, action.id, common_pb2.ACTION_DECISION_CONFIRM, "by-bob", who="bob")
    assert member.value.code() == grpc.StatusCode.PERMISSION_DENIED

    after = gateway.head()
    confirmed = decide(gateway, action.id, common_pb2.ACTION_DECISION_CONFIRM, "yes-1")
    assert confirmed.action.state == common_pb2.PENDING_ACTION_STATE_CONFIRMED
    assert confirmed.run_id and confirmed.action.outcome == confirmed.run_id
    events = gateway.wait_runs_ended(after, {confirmed.run_id})
    _completed(events, confirmed.run_id)
    assert memory(gateway, key) == {"diet": "veg"}
    assert gateway.snapshot(key).pending_actions == []

    retried = decide(gateway, action.id, common_pb2.ACTION_DECISION_CONFIRM, "yes-1")
    assert retried.run_id == confirmed.run_id
    with pytest.raises(grpc.RpcError) as second:
        decide(gateway, action.id, common_pb2.ACTION_DECISION_CANCEL, "no-1")
    assert second.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "already confirmed" in second.value.details()
    assert ended_runs(gateway.replay(after)[0]) == {confirmed.run_id}


def test_a_waiting_action_is_cancelled_and_nothing_runs(gateway: Gateway):
    key = gateway.create("p_cancel")
    action = waiting(gateway, key, "remember my diet, then cancel")
    after = gateway.head()
    cancelled = decide(gateway, action.id, common_pb2.ACTION_DECISION_CANCEL, "no-2")
    assert cancelled.action.state == common_pb2.PENDING_ACTION_STATE_CANCELLED
    assert cancelled.run_id == ""
    events = gateway.wait_for(after, lambda evs: actions_changed(evs) != [])
    assert actions_changed(events) == [
        ("Remember the diet", common_pb2.PENDING_ACTION_STATE_CANCELLED)
    ]
    assert gateway.snapshot(key).pending_actions == [] and memory(gateway, key) == {}
    listed = gateway.stub.ListActions(
        mind_pb2.ListActionsRequest(
            on_behalf_of=gateway.who("alice"), conversation_key=key, include_ended=True
        ),
        metadata=gateway.md,
        timeout=10,
    )
    assert [(a.id, a.state) for a in listed.pending] == [
        (action.id, common_pb2.PENDING_ACTION_STATE_CANCELLED)
    ]
    assert ended_runs(gateway.replay(after)[0]) == set()
    retried = decide(gateway, action.id, common_pb2.ACTION_DECISION_CANCEL, "no-2")
    assert retried.action.state == common_pb2.PENDING_ACTION_STATE_CANCELLED


def test_an_undefined_decision_is_invalid_argument_and_changes_nothing(gateway: Gateway):
    key = gateway.create("p_undefined")
    action = waiting(gateway, key, "remember my diet, then decide oddly")
    after = gateway.head()
    for undefined in (5, 99):
        with pytest.raises(grpc.RpcError) as refused:
            decide(gateway, action.id, undefined, f"odd-{undefined}")
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert refused.value.details().startswith(
            f"decision: {undefined} is not a valid tobe.v1.ActionDecision; expected one of "
            "ACTION_DECISION_CONFIRM, ACTION_DECISION_CANCEL, ACTION_DECISION_AMEND"
        )
    assert gateway.snapshot(key).pending_actions == [action]
    assert gateway.replay(after)[0] == [] and memory(gateway, key) == {}
    # The idempotency keys of the refused calls were not spent on them.
    cancelled = decide(gateway, action.id, common_pb2.ACTION_DECISION_CANCEL, "odd-5")
    assert cancelled.action.state == common_pb2.PENDING_ACTION_STATE_CANCELLED


def test_a_waiting_action_is_amended_evaluated_and_planned_again(gateway: Gateway):
    key = gateway.create("p_amend")
    action = waiting(gateway, key, "remember my diet, then amend")
    after = gateway.head()
    amended = decide(gateway, action.id, common_pb2.ACTION_DECISION_AMEND, "ch-1", "vegan")
    events = gateway.wait_runs_ended(after, {amended.run_id})
    _completed(events, amended.run_id)
    (replacement,) = gateway.snapshot(key).pending_actions
    assert replacement.title == "Remember vegan" and replacement.id != action.id
    assert "amended: vegan" in replacement.goal
    old = [a for a in payloads(events, "action_changed") if a.id == action.id]
    assert [(a.state, a.outcome) for a in old] == [
        (common_pb2.PENDING_ACTION_STATE_AMENDED, replacement.id)
    ]
    assert memory(gateway, key) == {}


def test_a_malformed_extractor_answer_twice_is_plain_chat_logged_and_counted_never_noted(
    mind: MindProcess, gateway: Gateway
):
    admin = Admin(mind.data_dir)
    before = admin.json("status")["decision_failures"].get("extract", 0)
    key = gateway.create("p_malformed")
    chat(gateway, key, "malformed please")
    assert notes(gateway, key) == []
    logged = eventually(
        lambda: [line for line in mind.output if "stage's answer was unusable" in line],
        what="the failure's log line",
    )
    assert key in logged[0] and "the extract stage" in logged[0] and "WARNING" in logged[0]
    assert "malformed please" not in "\n".join(mind.output)
    assert admin.json("status")["decision_failures"]["extract"] == before + 1
    shown = admin.run("status").output.splitlines()
    assert any(line.startswith("decision failures") and "extract" in line for line in shown)


T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
TTL = 600


@pytest.fixture(scope="module")
def clocked_mind() -> Iterator[tuple[MindProcess, Path]]:
    """A Mind reading the time from a file the test moves (`[scheduler] clock_file`), whose
    pending actions expire ten minutes after they are registered."""
    root = Path(tempfile.mkdtemp(prefix="tact-"))
    script, clock = root / "script.yaml", root / "now"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    set_clock(clock, T0)
    try:
        with running_mind(
            root,
            script=script,
            TOBE_ACTIONS__ENABLED="true",
            TOBE_ACTIONS__CONFIRMATION_TTL=str(TTL),
            TOBE_SCHEDULER__CLOCK_FILE=str(clock),
            TOBE_SCHEDULER__MAX_SLEEP="0.2",
        ) as process:
            yield process, clock
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_waiting_action_expires_at_its_time_and_can_no_longer_be_decided(
    clocked_mind: tuple[MindProcess, Path],
):
    mind, clock = clocked_mind
    gateway = Gateway.connect(mind)
    try:
        key = gateway.create("p_expire")
        events = chat(gateway, key, "remember my diet, then let it expire")
        (action,) = payloads(events, "action_changed")
        assert action.state == common_pb2.PENDING_ACTION_STATE_PENDING
        assert action.expires_at.ToDatetime(tzinfo=UTC) == T0 + timedelta(seconds=TTL)

        after = gateway.head()
        set_clock(clock, T0 + timedelta(seconds=TTL - 1))
        time.sleep(1.0)  # the loop looks several times and leaves it pending
        assert [a.id for a in gateway.snapshot(key).pending_actions] == [action.id]
        set_clock(clock, T0 + timedelta(seconds=TTL + 1))
        expired = gateway.wait_for(
            after,
            lambda events: any(
                a.state == common_pb2.PENDING_ACTION_STATE_EXPIRED
                for a in payloads(events, "action_changed")
            ),
        )
        assert actions_changed(expired) == [
            ("Remember the diet", common_pb2.PENDING_ACTION_STATE_EXPIRED)
        ]
        assert gateway.snapshot(key).pending_actions == []
        with pytest.raises(grpc.RpcError) as late:
            decide(gateway, action.id, common_pb2.ACTION_DECISION_CONFIRM, "too-late")
        assert late.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "already expired" in late.value.details()
        assert ended_runs(gateway.replay(after)[0]) == set() and memory(gateway, key) == {}
    finally:
        gateway.close()
