"""A model's "context too long" answer, on each wire, makes a real Mind compact once and retry
once: the error bodies are served byte for byte by a local server speaking the wire."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import running_mind
from provider_wire import JSON, Reply, WireServer, data_file, fixture_file

from mind.context.prompt import SUMMARISER_PROMPT
from tobe.v1 import common_pb2, events_pb2

pytestmark = pytest.mark.e2e

WIRES = [
    ("openai", "openai.json", "openai/e2e_answer.sse"),
    ("anthropic", "anthropic_prompt_too_long.json", "anthropic/basic_response.txt"),
    ("gemini", "gemini.json", "gemini/max_tokens.sse"),
]
SAID = "Here is what I would like you to keep in mind for our planning session. " * 8


def _is_summarising(body: dict) -> bool:
    opening = SUMMARISER_PROMPT[:60]
    return opening in json.dumps(body)


@pytest.mark.parametrize(("kind", "overflow", "answer"), WIRES)
def test_a_context_overflow_compacts_once_and_retries_once(
    tmp_path: Path, wire: WireServer, kind: str, overflow: str, answer: str
):
    good = Reply(body=data_file(answer))
    model = {"id": "small-model", "context_window": 4000, "max_output": 256}
    env = {
        "TOBE_PROVIDER__KIND": kind,
        "TOBE_PROVIDER__MODEL": "small-model",
        "TOBE_PROVIDER__MODELS": json.dumps([model]),
        "TOBE_PROVIDER__BASE_URL": wire.url,
        "TOBE_PROVIDER__API_KEY": "test-key",
        "TOBE_PROVIDER__MAX_RETRIES": "0",
    }
    with running_mind(tmp_path, script=None, **env) as mind:
        gateway = Gateway.connect(mind)
        try:
            key = gateway.create(f"p_{uuid.uuid4().hex[:12]}")
            for turn in range(3):
                wire.play(good)
                start = gateway.head()
                run = gateway.send(key, f"part {turn}: {SAID}", uuid.uuid4().hex).run_id
                gateway.wait_runs_ended(start, {run})
            wire.play(Reply(400, fixture_file(f"context_overflow/{overflow}"), dict(JSON)))
            wire.play(*[good] * 8)  # summaries (one per chunk), then the retried request
            start = gateway.head()
            run = gateway.send(key, f"part 3: {SAID}", uuid.uuid4().hex).run_id
            events = [e for e in gateway.wait_runs_ended(start, {run}) if e.conversation_key == key]
        finally:
            gateway.close()

    ended = [r for r in payloads(events, "run_changed") if r.id == run][-1]
    assert ended.state == common_pb2.RUN_STATE_COMPLETED, ended.reason
    compactions = payloads(events, "context_compacted")
    assert [c.trigger for c in compactions] == [events_pb2.COMPACTION_TRIGGER_OVERFLOW]
    asked = [json.loads(r.body) for r in wire.requests]
    chats = [body for body in asked if not _is_summarising(body)]
    summaries = [body for body in asked if _is_summarising(body)]
    assert len(chats) == 3 + 2, "the overflowed request is retried exactly once"
    assert len(summaries) == compactions[0].summary_calls >= 1
    assert "Summary of the earlier conversation" in json.dumps(chats[-1])
    assert "part 0:" not in json.dumps(chats[-1]), "the retry carries the summary instead"
