"""A declared profile's hooks and fixed texts in real runs: a real Mind (Scripted model) whose
`[profiles]` name hooks by import path (`guard_hooks`) and give a profile its own welcome and
error reply. What the model saw is proved by the script's `expect`s (a failed one fails the
run) and by the stored history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, running_mind

from tests.profiles.guard_hooks import STOP_TEXT
from tobe.v1 import common_pb2, mind_pb2

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MIND_WELCOME = "Welcome from the Mind."
MIND_ERROR_REPLY = "The Mind is sorry: that failed."
HOST_WELCOME = "Welcome, from the host profile."
HOST_ERROR_REPLY = "The host profile is sorry: that failed."
DENIED = "denied: blocked by profile 'guarded': no waiting in this profile"
HIDDEN = "the clock is hidden by the profile"
CONFIG = f"""
[[profiles.profile]]
name = "guarded"
platform_tools = ["current_time", "wait"]
before_tool_call = "tests.profiles.guard_hooks:no_waiting"
after_tool_call = "tests.profiles.guard_hooks:hide_the_clock"
should_stop_after_turn = "tests.profiles.guard_hooks:stop_on_cue"

[[profiles.profile]]
name = "host"
platform_tools = ["current_time"]
welcome = "{HOST_WELCOME}"
error_reply = "{HOST_ERROR_REPLY}"
"""
SCRIPT = f"""
runs:
  - match: "^guard"
    steps:
      - text: "Waiting first."
        tool_calls: [{{name: wait, arguments: {{seconds: 1}}}}]
      - expect: {{last_role: tool, last_is_error: true, last_contains: "{DENIED}"}}
        text: "Then the clock."
        tool_calls: [{{name: current_time, arguments: {{}}}}]
      - expect: {{last_role: tool, last_is_error: false, last_contains: "{HIDDEN}"}}
        text: "guarded"
  - match: "^stop"
    steps:
      - text: "{STOP_TEXT}"
        tool_calls: [{{name: current_time, arguments: {{}}}}]
      - text: "never said"
  - match: "^fail"
    steps:
      - {{error: "upstream refused the request", error_kind: request}}
  - match: ".*"
    steps: [{{text: "echo"}}]
"""


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script, config = tmp_path / "script.yaml", tmp_path / "config.toml"
    script.write_text(SCRIPT)
    config.write_text(CONFIG)
    with running_mind(
        tmp_path,
        script=script,
        TOBE_CONFIG=str(config),
        PYTHONPATH=str(ROOT),
        TOBE_MIND__WELCOME=MIND_WELCOME,
        TOBE_MIND__ERROR_REPLY=MIND_ERROR_REPLY,
    ) as process:
        yield process


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    gateway = Gateway.connect(mind)
    try:
        yield gateway
    finally:
        gateway.close()


def create(gateway: Gateway, key: str, profile: str) -> None:
    request = mind_pb2.CreateConversationRequest(
        on_behalf_of=gateway.who("alice"), key=key, profile=profile
    )
    gateway.stub.CreateConversation(request, metadata=gateway.md, timeout=10)


def run(gateway: Gateway, key: str, text: str) -> common_pb2.Run:
    after = gateway.head()
    run_id = gateway.send(key, text, f"{key}-{text}").run_id
    events = gateway.wait_runs_ended(after, {run_id})
    return [r for r in payloads(events, "run_changed") if r.id == run_id][-1]


def messages(gateway: Gateway, key: str) -> list[common_pb2.Message]:
    return list(gateway.history(key).messages)


def by_role(found: list[common_pb2.Message], role: int) -> list[common_pb2.Message]:
    return [m for m in found if m.role == role]


TOOL = common_pb2.MESSAGE_ROLE_TOOL
ASSISTANT = common_pb2.MESSAGE_ROLE_ASSISTANT


def test_before_tool_call_blocks_a_tool_and_the_model_reads_the_reason(gateway: Gateway) -> None:
    create(gateway, "p_guard", "guarded")
    guarded = run(gateway, "p_guard", "guard the tools")
    assert guarded.state == common_pb2.RUN_STATE_COMPLETED, guarded.reason
    waited, _clock = by_role(messages(gateway, "p_guard"), TOOL)
    assert waited.is_error
    assert waited.text == f"error: the call was {DENIED}"


def test_after_tool_call_replaces_the_outcome_the_model_sees(gateway: Gateway) -> None:
    create(gateway, "p_clock", "guarded")
    guarded = run(gateway, "p_clock", "guard the clock")
    assert guarded.state == common_pb2.RUN_STATE_COMPLETED, guarded.reason
    _waited, clock = by_role(messages(gateway, "p_clock"), TOOL)
    assert (clock.text, clock.is_error) == (HIDDEN, False)
    # The default profile has no hooks: the same tool's real result is stored there.
    create(gateway, "p_open", "")
    assert run(gateway, "p_open", "stop and look").state == common_pb2.RUN_STATE_COMPLETED
    (real,) = by_role(messages(gateway, "p_open"), TOOL)
    assert HIDDEN not in real.text and '"utc"' in real.text


def test_should_stop_after_turn_ends_the_run_after_that_step(gateway: Gateway) -> None:
    create(gateway, "p_stop", "guarded")
    stopped = run(gateway, "p_stop", "stop after one look")
    assert stopped.state == common_pb2.RUN_STATE_COMPLETED, stopped.reason
    assert stopped.reason == "stopped by profile 'guarded' after step 0"
    stored = messages(gateway, "p_stop")
    # The step's tool call ran; the model was never asked for the next step.
    model_said = [m.text for m in by_role(stored, ASSISTANT) if not m.posted_by]
    assert model_said == [STOP_TEXT]
    assert stored[-1].role == TOOL and stored[-1].text == HIDDEN


def test_a_profiles_welcome_and_error_reply_take_the_place_of_the_minds(
    gateway: Gateway,
) -> None:
    create(gateway, "p_host", "host")
    assert run(gateway, "p_host", "fail please").state == common_pb2.RUN_STATE_FAILED
    posted = [(m.posted_by, m.text) for m in messages(gateway, "p_host") if m.posted_by]
    assert posted == [("welcome", HOST_WELCOME), ("error_reply", HOST_ERROR_REPLY)]


def test_a_conversation_on_the_default_profile_gets_the_minds_welcome_and_error_reply(
    gateway: Gateway,
) -> None:
    create(gateway, "p_plain", "")
    assert run(gateway, "p_plain", "fail please").state == common_pb2.RUN_STATE_FAILED
    posted = [(m.posted_by, m.text) for m in messages(gateway, "p_plain") if m.posted_by]
    assert posted == [("welcome", MIND_WELCOME), ("error_reply", MIND_ERROR_REPLY)]
