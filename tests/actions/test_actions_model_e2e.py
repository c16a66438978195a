"""`[actions] model` and `[actions] provider`: a real Mind runs the decision layer's stages on
another model than its turns, against a local model server that records each request's
`model`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.json_model_server import CHAT_ANSWER, JsonModelServer, is_stage
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import mind_env, run_mind_command, running_mind

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

MAIN, CHEAP = "big-local-model", "small-local-model"
MODELS = json.dumps(
    [
        {"id": MAIN, "context_window": 32768, "max_output": 1024},
        {"id": CHEAP, "context_window": 8192, "max_output": 1024, "structured_output": "none"},
    ]
)


@pytest.fixture
def model() -> Iterator[JsonModelServer]:
    server = JsonModelServer().start()
    try:
        yield server
    finally:
        server.stop()


def _chat_once(tmp_path: Path, **env: str) -> list[str]:
    """Send one ordinary message to a Mind configured with `env`; the reply's text."""
    with running_mind(tmp_path, script=None, TOBE_ACTIONS__ENABLED="true", **env) as mind:
        gateway = Gateway.connect(mind)
        try:
            key = gateway.create(f"p_{uuid.uuid4().hex[:12]}")
            start = gateway.head()
            run = gateway.send(key, "How are you today?", uuid.uuid4().hex).run_id
            events = gateway.wait_runs_ended(start, {run})
            ended = [r for r in payloads(events, "run_changed") if r.id == run][-1]
            assert ended.state == common_pb2.RUN_STATE_COMPLETED, ended.reason
            messages = gateway.snapshot(key).messages
        finally:
            gateway.close()
    assert not [m for m in messages if m.role == common_pb2.MESSAGE_ROLE_NOTE]
    return [m.text for m in messages if m.role == common_pb2.MESSAGE_ROLE_ASSISTANT]


def test_the_stages_run_on_the_actions_model_and_the_turn_on_the_main_one(
    tmp_path: Path, model: JsonModelServer
):
    replies = _chat_once(
        tmp_path,
        TOBE_PROVIDER__KIND="openai",
        TOBE_PROVIDER__BASE_URL=model.url,
        TOBE_PROVIDER__MODEL=MAIN,
        TOBE_PROVIDER__MODELS=MODELS,
        TOBE_ACTIONS__MODEL=CHEAP,
    )
    assert replies == [CHAT_ANSWER]
    stages = [body for body in model.requests if is_stage(body)]
    turns = [body for body in model.requests if not is_stage(body)]
    assert {body["model"] for body in stages} == {CHEAP}
    assert [body["model"] for body in turns] == [MAIN]
    # The cheaper model has no structured output: prose first, then the corrected answer.
    assert len(stages) == 2 and all("response_format" not in body for body in stages)


def test_the_actions_provider_is_a_whole_provider_of_its_own(
    tmp_path: Path, model: JsonModelServer
):
    other = JsonModelServer().start()
    try:
        _chat_once(
            tmp_path,
            TOBE_PROVIDER__KIND="openai",
            TOBE_PROVIDER__BASE_URL=model.url,
            TOBE_PROVIDER__MODEL=MAIN,
            TOBE_PROVIDER__MODELS=MODELS,
            TOBE_ACTIONS__PROVIDER__KIND="openai",
            TOBE_ACTIONS__PROVIDER__BASE_URL=other.url,
            TOBE_ACTIONS__PROVIDER__MODEL=CHEAP,
            TOBE_ACTIONS__PROVIDER__MODELS=json.dumps(
                [{"id": CHEAP, "context_window": 8192, "max_output": 1024}]
            ),
            # What a server would say of it; the entry above leaves it unsaid.
            TOBE_ACTIONS__PROVIDER__STRUCTURED_OUTPUT="json_schema",
        )
    finally:
        other.stop()
    assert [body["model"] for body in model.requests] == [MAIN]
    [stage] = other.requests
    assert stage["model"] == CHEAP and stage["response_format"]["type"] == "json_schema"


def test_an_unknown_actions_model_stops_the_start_in_one_line_naming_the_setting(
    tmp_path: Path,
):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    env = mind_env(
        data_dir,
        None,
        TOBE_PROVIDER__KIND="openai",
        TOBE_PROVIDER__MODEL="gpt-4o",
        TOBE_PROVIDER__API_KEY="sk-test",
        TOBE_ACTIONS__MODEL="gpt-nonexistent",
    )
    result = run_mind_command(env)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert errors and errors[0].startswith(
        "Error: cannot start the Mind: [actions] model 'gpt-nonexistent': unknown model "
        "'gpt-nonexistent' for provider 'openai'"
    )
    assert "Traceback" not in result.stderr
