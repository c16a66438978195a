"""Permissions per adapter action, trust that limits runs, per-source conversations: a Mind and
Awareness as real processes (shared by the module), the `probe` adapter's `reply` write action
(declared an external side effect) and the Scripted model.

The approval rules name the action: `probe.reply` is allowed for observation runs in the
awareness conversation and asked for everywhere else; other side effects are denied, so an ask
comes from the rule, not from a default.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from awareness_harness import TOKEN, AwarenessProcess, Client, new_process
from helpers.eventually import eventually
from helpers.mind_gateway import TERMINAL_RUN_STATES, Gateway
from helpers.mind_process import MindProcess, running_mind
from helpers.store_backend import rows as store_rows

from mind.awareness.router import source_conversation
from tobe.v1 import common_pb2, events_pb2, mind_pb2

pytestmark = pytest.mark.e2e

AWARENESS = "p_awareness"
RULES = [
    {
        "tool": "probe.reply",
        "principal": "awareness",
        "conversation": AWARENESS,
        "verdict": "allow",
    },
    {"tool": "probe.reply", "verdict": "ask", "reason": "a reply leaves the house"},
]
REPLY = """
  - match: "{match}"
    steps:
      - tool_calls:
          - {{name: awareness_interact,
              arguments: {{adapter_id: "PROBE_ID", action: reply, args: {{text: "{text}"}}}}}}
      - {{expect: {{last_role: tool}}, text: "done"}}
"""
AWARENESS_TOOLS = "[awareness_observe, awareness_interact, awareness_engine]"
SCRIPT = (
    "runs:"
    + REPLY.format(match="^reply to probe please", text="from alice")
    + REPLY.format(match="low asks for a reply", text="from low")
    + REPLY.format(match="high asks for a reply", text="from high")
    + REPLY.format(match="medium asks for a reply", text="from medium")
    + f"""
  - match: "^in the group"
    steps:
      - {{expect: {{tools_exclude: {AWARENESS_TOOLS}}}, text: "no awareness tools here"}}
  - match: "^in private"
    steps:
      - {{expect: {{tools_include: {AWARENESS_TOOLS}}}, text: "awareness tools here"}}
  - match: "platform note"
    steps:
      - {{text: "seen"}}
"""
)
WAIT = 60.0


def on_awareness(target: str, call: Callable[[Client], Any]) -> Any:
    """One call of the Awareness test client, on its own event loop."""

    async def run() -> Any:
        client = Client(target)
        try:
            return await call(client)
        finally:
            await client.close()

    return asyncio.run(run())


@pytest.fixture(scope="module")
def awareness() -> Iterator[AwarenessProcess]:
    with new_process() as process:
        process.start()
        yield process


@pytest.fixture(scope="module")
def probe(awareness: AwarenessProcess) -> str:
    return on_awareness(awareness.target, lambda client: client.adapter_id("probe"))


@pytest.fixture(scope="module")
def mind(
    awareness: AwarenessProcess, probe: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MindProcess]:
    root = tmp_path_factory.mktemp("permissions")
    script = root / "script.yaml"
    script.write_text(SCRIPT.replace("PROBE_ID", probe))
    env = {
        "TOBE_MIND__AWARENESS_ADDRESS": awareness.target,
        "TOBE_AWARENESS__TOKEN": TOKEN,
        "TOBE_MIND__AWARENESS_OWNER": "alice",
        "TOBE_APPROVALS__RULES": json.dumps(RULES),
        "TOBE_APPROVALS__EXTERNAL_SIDE_EFFECT": "deny",
    }
    with running_mind(root, script=script, **env) as process:
        yield process


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    gateway = Gateway.connect(mind)
    try:
        yield gateway
    finally:
        gateway.close()


def emit(awareness: AwarenessProcess, probe: str, trust: str, text: str, **source: str) -> str:
    result = on_awareness(
        awareness.target,
        lambda client: client.interact(
            probe, "emit", trust=trust, content={"text": text}, **source
        ),
    )
    assert result["status"] == "success", result
    return str(result["result"]["observation_id"])


def replies(awareness: AwarenessProcess) -> list[str]:
    """What the probe's `reply` action sent."""
    path = awareness.instance_dir("probe") / "data" / "replies.txt"
    return path.read_text().splitlines() if path.exists() else []


def rows(mind: MindProcess, query: str, *params: object) -> list[tuple[Any, ...]]:
    return store_rows(mind.url, query, *params)


def ended_run(key: str, trigger: str) -> Callable[[list[events_pb2.Event]], object]:
    def done(events: list[events_pb2.Event]) -> common_pb2.Run | None:
        return next(
            (
                e.run_changed
                for e in events
                if e.HasField("run_changed")
                and e.conversation_key == key
                and e.run_changed.trigger == trigger
                and e.run_changed.state in TERMINAL_RUN_STATES
            ),
            None,
        )

    return done


def pending_approval(key: str) -> Callable[[list[events_pb2.Event]], object]:
    def done(events: list[events_pb2.Event]) -> common_pb2.Approval | None:
        return next(
            (
                e.approval_changed
                for e in events
                if e.HasField("approval_changed")
                and e.conversation_key == key
                and e.approval_changed.decision == common_pb2.APPROVAL_DECISION_UNSPECIFIED
            ),
            None,
        )

    return done


def wait(gateway: Gateway, after: int, done: Callable[[list[events_pb2.Event]], Any]) -> Any:
    return done(gateway.wait_for(after, lambda events: done(events) is not None, timeout=WAIT))


def decide(gateway: Gateway, approval_id: str, decision: int) -> None:
    request = mind_pb2.DecideApprovalRequest(
        on_behalf_of=gateway.who("alice", "chat", "approve"),
        approval_id=approval_id,
        decision=decision,
    )
    gateway.stub.DecideApproval(request, metadata=gateway.md, timeout=15)


def approvals_after(gateway: Gateway, after: int) -> list[common_pb2.Approval]:
    events, _ = gateway.replay(after)
    return [e.approval_changed for e in events if e.HasField("approval_changed")]


def calls_of(mind: MindProcess, run_id: str) -> list[tuple[str, str]]:
    """(terminal status, `source:verdict summary` of an audit row) of each audit row of the
    run's calls."""
    return rows(
        mind,
        "SELECT p.status, a.source || ':' || a.verdict || ' ' || a.summary "
        "FROM tool_projections p JOIN approval_audit a ON a.tool_call_id = p.tool_call_id "
        "WHERE p.run_id = ? ORDER BY a.id",
        run_id,
    )


def test_a_low_trust_run_is_denied_an_adapter_write_despite_a_conversation_grant_and_an_allow_rule(
    awareness: AwarenessProcess, probe: str, mind: MindProcess, gateway: Gateway
) -> None:
    head = gateway.head()
    gateway.send(AWARENESS, "reply to probe please", "person-reply")
    asked = wait(gateway, head, pending_approval(AWARENESS))
    # The person sees the action by name, and the rule naming it asked (the default denies).
    assert (asked.tool, asked.reason, asked.origin) == ("probe.reply", RULES[1]["reason"], "")
    decide(gateway, asked.id, common_pb2.APPROVAL_DECISION_APPROVE_CONVERSATION)
    wait(gateway, head, ended_run(AWARENESS, "user"))
    assert replies(awareness) == ["from alice"]
    assert rows(mind, "SELECT tool FROM approval_grants") == [("probe.reply",)]

    head = gateway.head()
    emit(awareness, probe, "low", "low asks for a reply")
    low = wait(gateway, head, ended_run(AWARENESS, "observation:low"))
    [(status, audit)] = calls_of(mind, low.id)
    assert status == "denied" and audit.endswith("[trust]")
    assert audit.startswith("policy:deny probe.reply (external_side_effect)")
    [(text,)] = rows(mind, "SELECT text FROM messages WHERE run_id = ? AND role = 'tool'", low.id)
    assert "low-trust observation, so it may only read" in text
    assert replies(awareness) == ["from alice"]
    assert rows(mind, "SELECT id FROM approvals WHERE conversation_key = ?", AWARENESS) == [
        (asked.id,)
    ]


def test_a_rule_naming_the_action_allows_it_for_the_runs_it_names(
    awareness: AwarenessProcess, probe: str, mind: MindProcess, gateway: Gateway
) -> None:
    head = gateway.head()
    emit(awareness, probe, "high", "high asks for a reply")
    high = wait(gateway, head, ended_run(AWARENESS, "observation:high"))
    [(status, audit)] = calls_of(mind, high.id)
    assert status == "succeeded" and audit.startswith("policy:allow probe.reply")
    assert audit.endswith("[rules[0]]")
    assert "from high" in replies(awareness)
    assert approvals_after(gateway, head) == []


def test_an_approval_request_of_a_medium_trust_run_shows_its_origin(
    awareness: AwarenessProcess, probe: str, mind: MindProcess, gateway: Gateway
) -> None:
    key = source_conversation("probe", "inbox")
    origin = "a medium-trust observation from probe (Inbox)"
    head = gateway.head()
    emit(
        awareness,
        probe,
        "medium",
        "medium asks for a reply",
        source_key="inbox",
        source_title="Inbox",
    )
    asked = wait(gateway, head, pending_approval(key))
    # Its trust and source, never its content.
    assert (asked.tool, asked.origin) == ("probe.reply", origin)
    shown = subprocess.run(
        [sys.executable, "-m", "tobe", "admin", "approvals", "show", asked.id],
        env=mind.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert any(line.split() == ["origin", *origin.split()] for line in shown.stdout.splitlines())
    decide(gateway, asked.id, common_pb2.APPROVAL_DECISION_DENY)
    wait(gateway, head, ended_run(key, "observation:medium"))
    assert "from medium" not in replies(awareness)


def test_two_sources_of_one_adapter_land_in_two_conversations_of_the_owner(
    awareness: AwarenessProcess, probe: str, mind: MindProcess
) -> None:
    first = emit(
        awareness, probe, "low", "just looking", source_key="room-1", source_title="Room One"
    )
    second = emit(awareness, probe, "low", "just looking", source_key="room-2")
    expected = {
        source_conversation("probe", "room-1"): ("probe: Room One", first),
        source_conversation("probe", "room-2"): ("probe: room-2", second),
    }

    def delivered() -> dict[str, tuple[str, str]]:
        found = rows(
            mind,
            "SELECT c.key, c.title, c.owner, m.payload FROM conversations c "
            "JOIN messages m ON m.conversation_key = c.key AND m.role = 'note' "
            "WHERE c.key LIKE 'p_aw-probe-room-%'",
        )
        return {
            key: (title, *json.loads(payload)["source"]["observation_ids"])
            for key, title, owner, payload in found
            if owner == "alice"
        }

    eventually(
        delivered, WAIT, what="a note in each source's conversation", until=lambda d: d == expected
    )
    origins = rows(
        mind,
        "SELECT conversation_key, origin FROM runs WHERE conversation_key LIKE 'p_aw-probe-room-%'",
    )
    assert sorted(origins) == sorted(
        [
            (
                source_conversation("probe", "room-1"),
                "a low-trust observation from probe (Room One)",
            ),
            (source_conversation("probe", "room-2"), "a low-trust observation from probe (room-2)"),
        ]
    )


def test_the_awareness_tools_are_absent_from_a_group_conversation_with_a_member(
    mind: MindProcess, gateway: Gateway
) -> None:
    head = gateway.head()
    gateway.create("g_team", members=("bob",))
    gateway.create("p_private")
    gateway.send("g_team", "in the group", "group")
    gateway.send("p_private", "in private", "private")
    group = wait(gateway, head, ended_run("g_team", "user"))
    private = wait(gateway, head, ended_run("p_private", "user"))
    # A failed expectation of the script (a tool offered, or missing) fails the run.
    assert group.state == private.state == common_pb2.RUN_STATE_COMPLETED
    texts = rows(
        mind,
        "SELECT conversation_key, text FROM messages WHERE role = 'assistant' AND run_id IN (?, ?)",
        group.id,
        private.id,
    )
    assert sorted(texts) == [
        ("g_team", "no awareness tools here"),
        ("p_private", "awareness tools here"),
    ]
