"""A small local model behind llama-server, Ollama, vLLM or LM Studio, as a new user runs it:
a model id the catalog does not know, no window configured, the decision layer on (the
default), and a long conversation. Every turn is answered, no request goes over the window the
server loaded the model with, and nothing about JSON or the decision layer shows up in the
conversation."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from helpers.local_servers import KINDS, local_server
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import running_mind

from tobe.v1 import common_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.long_running]

TURNS = 30
TOPICS = ("the garden", "the trip to Lisbon", "the book club", "the new bike", "the tax forms")


def _message(turn: int) -> str:
    """About 1,500 characters the person says, different every turn."""
    topic = TOPICS[turn % len(TOPICS)]
    sentence = (
        f"Turn {turn}: some thoughts about {topic}, which I keep coming back to this week; "
        "nothing to do about it yet, I just want to talk it through with you. "
    )
    return (sentence * 12)[:1500]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_thirty_long_turns_on_a_small_local_model_stay_within_its_window(tmp_path: Path, kind: str):
    with local_server(kind, loaded_window=4096, max_window=131072) as fake:
        env = {
            "TOBE_PROVIDER__KIND": "openai",
            "TOBE_PROVIDER__MODEL": fake.model,
            "TOBE_PROVIDER__BASE_URL": fake.base_url,
            "TOBE_PROVIDER__MAX_RETRIES": "0",
            "TOBE_ACTIONS__ENABLED": "true",  # the default a new user gets
        }
        with running_mind(tmp_path, script=None, **env) as mind:
            gateway = Gateway.connect(mind)
            try:
                key = gateway.create(f"p_{uuid.uuid4().hex[:12]}")
                ended = []
                for turn in range(TURNS):
                    start = gateway.head()
                    run = gateway.send(key, _message(turn), uuid.uuid4().hex).run_id
                    events = gateway.wait_runs_ended(start, {run}, timeout=60)
                    ended.append([r for r in payloads(events, "run_changed") if r.id == run][-1])
                history = gateway.history(key)
            finally:
                gateway.close()

    failed = [
        (i, r.reason) for i, r in enumerate(ended) if r.state != common_pb2.RUN_STATE_COMPLETED
    ]
    assert not failed, failed
    over = [(c.prompt_tokens, c.max_tokens) for c in fake.chats if c.over_window]
    assert not over, f"{len(over)} of {len(fake.chats)} requests went over the 4096-token window"
    # The decision layer read every message, held to its schema by the server.
    stages = [c for c in fake.chats if c.structured is not None]
    assert len(stages) >= TURNS and all(c.structured == "json_schema" for c in stages)
    assert all(c.answered_json for c in stages)
    answers = [m for m in history.messages if m.role == common_pb2.MESSAGE_ROLE_ASSISTANT]
    assert len([m for m in answers if m.text]) >= TURNS
    notes = [m.text for m in history.messages if m.role == common_pb2.MESSAGE_ROLE_NOTE]
    shown = "\n".join(notes)
    assert "JSON" not in shown and "decision layer" not in shown, shown[:500]


def test_a_message_longer_than_the_window_is_refused_in_one_line_with_the_numbers(
    tmp_path: Path,
):
    with local_server("llama-server", loaded_window=4096) as fake:
        env = {
            "TOBE_PROVIDER__KIND": "openai",
            "TOBE_PROVIDER__MODEL": fake.model,
            "TOBE_PROVIDER__BASE_URL": fake.base_url,
            "TOBE_PROVIDER__MAX_RETRIES": "0",
        }
        with running_mind(tmp_path, script=None, **env) as mind:
            gateway = Gateway.connect(mind)
            try:
                key = gateway.create(f"p_{uuid.uuid4().hex[:12]}")
                start = gateway.head()
                run = gateway.send(key, _message(0) * 14, uuid.uuid4().hex).run_id
                events = gateway.wait_runs_ended(start, {run}, timeout=60)
            finally:
                gateway.close()

    ended = [r for r in payloads(events, "run_changed") if r.id == run][-1]
    assert ended.state == common_pb2.RUN_STATE_FAILED
    (line,) = ended.reason.splitlines()
    assert line.startswith("the latest message is too long for the model: the request needs ~")
    assert "context window of 4096 tokens takes at most 2560 (1024 are kept for the reply)" in line
    assert "[[provider.models]] context_window" in line
    assert "compact" not in line
    assert not [c for c in fake.chats if c.over_window], "nothing too long was sent"


@pytest.mark.parametrize("kind", ["llama-server", "vllm", "lmstudio"])
def test_a_window_configured_too_large_is_corrected_by_the_servers_first_refusal(
    tmp_path: Path, kind: str
):
    """The config says 16k; the server loaded 4k. Its first refusal names the real window:
    that request is compacted and retried once, and nothing after it goes over again."""
    with local_server(kind, loaded_window=4096) as fake:
        entry = f'[{{"id": "{fake.model}", "context_window": 16384, "max_output": 1024}}]'
        env = {
            "TOBE_PROVIDER__KIND": "openai",
            "TOBE_PROVIDER__MODEL": fake.model,
            "TOBE_PROVIDER__BASE_URL": fake.base_url,
            "TOBE_PROVIDER__MODELS": entry,
            "TOBE_PROVIDER__MAX_RETRIES": "0",
        }
        with running_mind(tmp_path, script=None, **env) as mind:
            gateway = Gateway.connect(mind)
            try:
                key = gateway.create(f"p_{uuid.uuid4().hex[:12]}")
                ended = []
                for turn in range(12):
                    start = gateway.head()
                    run = gateway.send(key, _message(turn), uuid.uuid4().hex).run_id
                    events = gateway.wait_runs_ended(start, {run}, timeout=60)
                    ended.append([r for r in payloads(events, "run_changed") if r.id == run][-1])
            finally:
                gateway.close()
            log = "\n".join(mind.output)

    failed = [
        (i, r.reason) for i, r in enumerate(ended) if r.state != common_pb2.RUN_STATE_COMPLETED
    ]
    assert not failed, failed
    over = [i for i, c in enumerate(fake.chats) if c.over_window]
    assert len(over) == 1, f"requests over the window: {over} of {len(fake.chats)}"
    (warning,) = [line for line in log.splitlines() if "says its context window" in line]
    assert "is 4096 tokens, not the 16384 believed" in warning
