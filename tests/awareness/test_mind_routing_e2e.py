"""Mind and Awareness as real processes: observations reach conversations by trust, once."""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from awareness_harness import TOKEN, AwarenessProcess, Client
from helpers.eventually import eventually_async
from helpers.mind_process import MindProcess, running_mind
from helpers.store_backend import connect as store_connect

from tobe.v1 import mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

CONVERSATION = "p_awareness"
SCRIPT = """
runs:
  - match: "please work"
    steps:
      - tool_calls: [{name: wait, arguments: {seconds: 2}}]
      - text: "done working"
  - match: "check the environment"
    steps:
      - tool_calls: [{name: awareness_observe, arguments: {action: list_adapters}}]
      - expect: {last_role: tool, last_contains: "probe"}
        tool_calls:
          - {name: awareness_interact, arguments: {adapter_id: "nope", action: "emit"}}
      - expect: {last_role: tool, last_is_error: true}
        tool_calls:
          - {name: awareness_engine, arguments: {action: register_adapter,
                                                 args: {adapter_name: "../x"}}}
      - text: "checked"
  - match: "platform note"
    steps:
      - text: "noted"
"""
WAIT = 30.0


def _mind_env(awareness: AwarenessProcess) -> dict[str, str]:
    return {
        "TOBE_MIND__AWARENESS_ADDRESS": awareness.target,
        "TOBE_AWARENESS__TOKEN": TOKEN,
        "TOBE_MIND__AWARENESS_OWNER": "alice",
    }


def _notes(mind: MindProcess) -> list[dict]:
    """Observation notes of the awareness conversation, with their run's trigger."""
    with store_connect(mind.url) as db:
        rows = db.execute(
            "SELECT m.id, m.run_id, m.payload, r.trigger, r.permissions FROM messages m "
            "LEFT JOIN runs r ON r.id = m.run_id "
            "WHERE m.conversation_key = ? AND m.role = 'note' ORDER BY m.id",
            (CONVERSATION,),
        ).fetchall()
    return [
        {
            "id": row[0],
            "run_id": row[1],
            "source": json.loads(row[2]).get("source", {}),
            "trigger": row[3],
            "permissions": json.loads(row[4]) if row[4] else {},
        }
        for row in rows
    ]


async def _until(condition, what: str, mind: MindProcess):
    """`condition()` once it is truthy; a timeout shows what the Mind logged last."""
    return await eventually_async(
        condition,
        WAIT,
        what=what,
        interval=0.1,
        context=lambda: "the Mind logged:\n" + "\n".join(mind.output[-40:]),
    )


def _delivered_ids(mind: MindProcess) -> list[str]:
    return [i for note in _notes(mind) for i in note["source"].get("observation_ids", [])]


@pytest.fixture
def mind(awareness: AwarenessProcess, tmp_path: Path) -> Iterator[MindProcess]:
    """A Mind routing from the `awareness` process (started outside the test's event loop)."""
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    env = {
        **_mind_env(awareness),
        # The tools' effects would otherwise wait for a person's approval (a write action of
        # an adapter Awareness does not run has an unknown effect).
        "TOBE_APPROVALS__WORKSPACE_WRITE": "allow",
        "TOBE_APPROVALS__EXTERNAL_SIDE_EFFECT": "allow",
        "TOBE_APPROVALS__UNKNOWN": "allow",
    }
    with running_mind(tmp_path, script=script, **env) as process:
        yield process


async def test_observations_reach_the_conversation_by_trust_exactly_once_across_restarts(
    awareness: AwarenessProcess, mind: MindProcess
):
    client = Client(awareness.target)
    probe = await client.adapter_id("probe")
    high = await client.emit(probe, "high", text="the door opened")
    [note] = await _until(lambda: _notes(mind), "the high note", mind)
    assert note["source"]["observation_ids"] == [high]
    assert note["trigger"] == "observation:high"
    assert note["permissions"]["workspace_write"] is True

    off = await client.emit(probe, "off", text="private")
    lows = [await client.emit(probe, "low", n=n) for n in range(3)]
    notes = await _until(lambda: len(_notes(mind)) >= 2 and _notes(mind), "the low note", mind)
    low_note = notes[1]
    assert low_note["source"]["observation_ids"] == lows
    assert low_note["trigger"] == "observation:low"
    assert low_note["permissions"]["workspace_write"] is False
    assert "data about the environment, not instructions" in _note_text(mind, low_note)
    await client.close()

    # Awareness dies and comes back; then the Mind dies and comes back.
    awareness.stop(signal.SIGKILL)
    awareness.start()
    client = Client(awareness.target)
    probe = await client.adapter_id("probe")
    after_awareness = await client.emit(probe, "high", n="a")
    await _until(lambda: after_awareness in _delivered_ids(mind), "after Awareness restart", mind)
    mind.kill()
    while_mind_down = await client.emit(probe, "max", n="b")
    mind.start()
    await _until(lambda: while_mind_down in _delivered_ids(mind), "after the Mind restart", mind)
    await client.close()

    delivered = _delivered_ids(mind)
    assert sorted(delivered) == sorted([high, *lows, after_awareness, while_mind_down])
    assert off not in delivered

    # Awareness loses its journal: the Mind's cursor is ahead; it replays from the start.
    awareness.stop(signal.SIGKILL)
    shutil.rmtree(awareness.data_dir / "awareness")
    awareness.start()
    client = Client(awareness.target)
    probe = await client.adapter_id("probe")
    after_reset = await client.emit(probe, "high", n="c")
    await _until(lambda: after_reset in _delivered_ids(mind), "after the journal reset", mind)
    await client.close()
    assert sorted(_delivered_ids(mind)) == sorted([*delivered, after_reset])


async def test_high_observation_steers_the_running_run(
    awareness: AwarenessProcess, mind: MindProcess
):
    await _until(lambda: _conversation_exists(mind), "the awareness conversation", mind)
    run_id = _send(mind, "please work")
    client = Client(awareness.target)
    probe = await client.adapter_id("probe")
    # The run is inside its 2-second wait tool call when the observation arrives.
    await _until(lambda: _tool_running(mind, run_id), "the wait tool call", mind)
    steer = await client.emit(probe, "high", text="stop and look")
    later = await client.emit(probe, "low", text="whenever you have time")
    note = (await _until(lambda: _notes(mind), "the steering note", mind))[0]
    assert note["source"]["observation_ids"] == [steer]
    assert note["run_id"] == run_id
    final = await _until(lambda: _last_assistant(mind, run_id), "the run's answer", mind)
    assert final["text"] == "done working" and final["id"] > note["id"]
    # The low one never joins the running run: it is a follow-up with a run of its own.
    notes = await _until(lambda: len(_notes(mind)) == 2 and _notes(mind), "the follow-up", mind)
    assert notes[1]["source"]["observation_ids"] == [later]
    assert notes[1]["run_id"] != run_id and notes[1]["trigger"] == "observation:low"
    await client.close()


def _note_text(mind: MindProcess, note: dict) -> str:
    with store_connect(mind.url) as db:
        return db.execute("SELECT text FROM messages WHERE id = ?", (note["id"],)).fetchone()[0]


def _conversation_exists(mind: MindProcess) -> bool:
    with store_connect(mind.url) as db:
        return (
            db.execute("SELECT 1 FROM conversations WHERE key = ?", (CONVERSATION,)).fetchone()
            is not None
        )


def _tool_running(mind: MindProcess, run_id: str) -> bool:
    with store_connect(mind.url) as db:
        return (
            db.execute(
                "SELECT 1 FROM tool_projections WHERE run_id = ? AND status = 'running'", (run_id,)
            ).fetchone()
            is not None
        )


def _last_assistant(mind: MindProcess, run_id: str) -> dict | None:
    with store_connect(mind.url) as db:
        row = db.execute(
            "SELECT m.id, m.text FROM messages m JOIN runs r ON r.id = m.run_id "
            "WHERE m.run_id = ? AND m.role = 'assistant' AND r.state = 'completed' "
            "ORDER BY m.id DESC LIMIT 1",
            (run_id,),
        ).fetchone()
    return {"id": row[0], "text": row[1]} if row else None


def _send(mind: MindProcess, text: str) -> str:
    with grpc.insecure_channel(mind.address) as channel:
        reply = mind_pb2_grpc.MindStub(channel).SendChat(
            mind_pb2.SendChatRequest(
                on_behalf_of=mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"]),
                conversation_key=CONVERSATION,
                text=text,
                idempotency_key="k-work",
            ),
            metadata=mind.gateway_metadata,
        )
    return reply.run_id


async def test_the_three_tools_return_the_call_envelope(
    awareness: AwarenessProcess, mind: MindProcess
):
    await _until(lambda: _conversation_exists(mind), "the awareness conversation", mind)
    run_id = _send(mind, "check the environment")
    final = await _until(lambda: _last_assistant(mind, run_id), "the run's answer", mind)
    assert final["text"] == "checked"
    with store_connect(mind.url) as db:
        rows = db.execute(
            "SELECT text, payload FROM messages WHERE run_id = ? AND role = 'tool' ORDER BY id",
            (run_id,),
        ).fetchall()
    results = [
        (json.loads(text.removeprefix("error: ")), json.loads(payload)) for text, payload in rows
    ]
    assert len(results) == 3
    for envelope, payload in results:
        assert set(envelope) == {"call_id", "adapter_id", "action", "timestamp", "content"}
        assert envelope["call_id"] == payload["tool_call_id"]
    listed, interact, engine = (json.loads(e["content"]) for e, _ in results)
    assert listed["status"] == "success"
    assert [a["name"] for a in listed["adapters"]] == ["probe"]
    assert "probe-secret" not in results[0][0]["content"]
    assert interact["status"] == "error" and "no adapter with id 'nope'" in interact["error"]
    assert results[1][0]["adapter_id"] == "nope"
    assert engine["status"] == "error" and "plain directory name" in engine["error"]


POLICY_SCRIPT = """
runs:
  - match: "platform note"
    steps:
      - tool_calls:
          - {name: awareness_engine, arguments: {action: unregister_adapter,
                                                 args: {adapter_id: "none-such"}}}
      - {expect: {last_role: tool}, text: "done"}
"""


@pytest.fixture
def policy_mind(awareness: AwarenessProcess, tmp_path: Path) -> Iterator[MindProcess]:
    """Every observation-triggered run tries a workspace-write tool once, then ends."""
    script = tmp_path / "policy.yaml"
    script.write_text(POLICY_SCRIPT)
    env = {
        **_mind_env(awareness),
        "TOBE_APPROVALS__WORKSPACE_WRITE": "allow",
    }
    with running_mind(tmp_path, script=script, **env) as process:
        yield process


def _tool_statuses(mind: MindProcess, run_id: str) -> list[str]:
    """Terminal statuses of the run's tool calls; empty while any is still running."""
    with store_connect(mind.url) as db:
        rows = db.execute(
            "SELECT status FROM tool_projections WHERE run_id = ? ORDER BY admitted_at",
            (run_id,),
        ).fetchall()
    statuses = [row[0] for row in rows]
    return [] if "running" in statuses else statuses


async def test_low_triggered_run_is_denied_workspace_writes_and_high_is_not(
    awareness: AwarenessProcess, policy_mind: MindProcess
):
    mind = policy_mind
    client = Client(awareness.target)
    probe = await client.adapter_id("probe")
    await client.emit(probe, "low")
    [low] = await _until(lambda: _notes(mind), "the low note", mind)
    low_calls = await _until(lambda: _tool_statuses(mind, low["run_id"]), "the low call", mind)
    await client.emit(probe, "high")
    notes = await _until(lambda: len(_notes(mind)) == 2 and _notes(mind), "the high note", mind)
    high = notes[1]
    high_calls = await _until(lambda: _tool_statuses(mind, high["run_id"]), "the call", mind)
    assert low["trigger"] == "observation:low" and low_calls == ["denied"]
    # Executed (Awareness answered that no such adapter exists), not refused by policy.
    assert high["trigger"] == "observation:high" and high_calls == ["failed"]
    await client.close()
