"""A condition on observations, end to end: Mind and Awareness as real processes, the decision
layer on (Scripted model). "Tell me when the build fails" becomes a scheduled action on the
probe adapter's observations (the Evaluator is told which adapters exist); a matching
observation fires it once, and its proactive run posts the news to the conversation that
asked; one that does not match fires nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from awareness_harness import TOKEN, AwarenessProcess, Client
from helpers.eventually import eventually
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

CONDITION = {"kind": "observation", "adapter": "probe", "match": r"build \d+ failed"}
SCRIPT: dict[str, Any] = {
    "decisions": [
        {
            "stage": "extract",
            "match": "The owner's input:\ntell me when the build fails",
            "answers": [
                {
                    "tendencies": [
                        {"goal": "Tell the owner when the build fails", "evidence": "."}
                    ],
                    "pending": [],
                }
            ],
        },
        {
            "stage": "evaluate",
            # Only when the Evaluator was told of the probe adapter, which the condition names.
            "match": "(?s)observation condition can name.*- probe.*goal: Tell the owner when",
            "answers": [
                {
                    "verdict": "planned",
                    "reason": "on a future observation",
                    "title": "Build failure",
                    "actions": ["send_message"],
                    "trigger": CONDITION,
                }
            ],
        },
        {
            "stage": "plan",
            "match": "title: Build failure",
            "answers": [
                {"steps": [{"order": 1, "action": "send_message", "purpose": "tell", "after": []}]}
            ],
        },
    ],
    "runs": [
        {"match": "^tell me when the build fails", "steps": [{"text": "I will tell you."}]},
        {
            "match": "Scheduled action 'Build failure'",
            "steps": [
                {
                    "expect": {"request_contains": ["build 42 failed"]},
                    "tool_calls": [
                        {"name": "send_message", "arguments": {"text": "Build 42 failed."}}
                    ],
                }
            ],
        },
        {"match": "Environment observation", "steps": [{"text": "noted"}]},
    ],
}


@pytest.fixture
def mind(awareness: AwarenessProcess, tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    with running_mind(
        tmp_path,
        script=script,
        TOBE_MIND__AWARENESS_ADDRESS=awareness.target,
        TOBE_AWARENESS__TOKEN=TOKEN,
        TOBE_MIND__AWARENESS_OWNER="alice",
        TOBE_ACTIONS__ENABLED="true",
    ) as process:
        yield process


async def test_an_observation_matching_a_condition_fires_it_once(
    awareness: AwarenessProcess, mind: MindProcess
):
    gateway = Gateway.connect(mind)
    client = Client(awareness.target)
    try:
        key = gateway.create("p_builds")
        after = gateway.head()
        sent = gateway.send(key, "tell me when the build fails", "ask")
        gateway.wait_runs_ended(after, {sent.run_id})
        (watch,) = gateway.snapshot(key).scheduled_actions
        assert watch.trigger.observation.match == CONDITION["match"]
        assert not watch.HasField("next_fire_at")

        probe = await client.adapter_id("probe")
        await client.emit(probe, "high", text="build 42 failed")
        events = gateway.wait_for(
            after,
            lambda events: any(
                m.posted_by == f"schedule:{watch.id}" for m in payloads(events, "message_appended")
            ),
        )
        (posted,) = [
            m for m in payloads(events, "message_appended") if m.posted_by == f"schedule:{watch.id}"
        ]
        assert (posted.conversation_key, posted.text) == (key, "Build 42 failed.")

        passed = await client.emit(probe, "high", text="build 43 passed")
        green = await client.emit(probe, "high", text="build 44 is green")
        observed = eventually(
            lambda: (
                {
                    observation
                    for note in gateway.snapshot("p_awareness").messages
                    if note.role == common_pb2.MESSAGE_ROLE_NOTE
                    for observation in (passed, green)
                    if observation in note.text
                }
                == {passed, green}
            ),
            what="the later observations delivered",
        )
        assert observed
        (watch,) = gateway.snapshot(key).scheduled_actions
        assert watch.firing_count == 1
        assert watch.last_firing.outcome == common_pb2.FIRING_OUTCOME_SENT
    finally:
        await client.close()
        gateway.close()
