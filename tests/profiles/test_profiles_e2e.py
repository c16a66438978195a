"""Profiles end to end: a real Mind (Scripted model) configured with `[profiles]` and a factory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import common_pb2, mind_pb2

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """
[profiles]
factory = "tests.profiles.profile_fixtures:factory"

[[profiles.profile]]
name = "coach"
description = "a running coach"
persona = "You are a running coach."
platform_tools = ["current_time"]
hand_tools = false

[[profiles.profile]]
name = "broken"
platform_tools = ["current_time", "teleport"]

[[profiles.profile]]
name = "clashing"
platform_tools = ["current_time"]
"""
SCRIPT = """
runs:
  - match: "^coach"
    steps:
      - expect:
          system_contains: "You are a running coach."
          tools_include: [current_time]
          tools_exclude: [wait]
        text: "coached"
  - match: "^plain"
    steps:
      - expect: {tools_include: [current_time, wait]}
        text: "plain"
  - match: ".*"
    steps: [{text: "echo"}]
"""


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script, config = tmp_path / "script.yaml", tmp_path / "config.toml"
    script.write_text(SCRIPT)
    config.write_text(CONFIG)
    with running_mind(
        tmp_path, script=script, TOBE_CONFIG=str(config), PYTHONPATH=str(ROOT)
    ) as process:
        yield process


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    gateway = Gateway.connect(mind)
    try:
        yield gateway
    finally:
        gateway.close()


def _create(gateway: Gateway, key: str, profile: str, principal: str = "alice", members=()):
    request = mind_pb2.CreateConversationRequest(
        on_behalf_of=gateway.who(principal), key=key, profile=profile, members=list(members)
    )
    return gateway.stub.CreateConversation(request, metadata=gateway.md, timeout=10).conversation


def _run(gateway: Gateway, key: str, text: str) -> common_pb2.Run:
    after = gateway.head()
    run_id = gateway.send(key, text, f"{key}-{text}").run_id
    events = gateway.wait_runs_ended(after, {run_id})
    return [run for run in payloads(events, "run_changed") if run.id == run_id][-1]


def test_two_conversations_with_different_profiles_see_different_personas_and_tools(
    gateway: Gateway,
) -> None:
    assert _create(gateway, "p_coach", "coach").profile == "coach"
    assert _create(gateway, "p_plain", "").profile == "default"
    coached = _run(gateway, "p_coach", "coach me")
    plain = _run(gateway, "p_plain", "plain please")
    assert coached.state == common_pb2.RUN_STATE_COMPLETED, coached.reason
    assert plain.state == common_pb2.RUN_STATE_COMPLETED, plain.reason


def test_a_tool_name_clash_stops_only_its_conversation_naming_profile_and_tool(
    gateway: Gateway,
) -> None:
    _create(gateway, "p_clash", "clashing")
    _create(gateway, "p_fine", "")
    failed = _run(gateway, "p_clash", "hello")
    assert failed.state == common_pb2.RUN_STATE_FAILED
    assert "profile 'clashing': two tools are named 'current_time'" in failed.reason
    assert _run(gateway, "p_fine", "plain again").state == common_pb2.RUN_STATE_COMPLETED


def test_creating_with_an_unknown_or_known_bad_profile_is_refused_clearly(
    gateway: Gateway,
) -> None:
    with pytest.raises(grpc.RpcError) as unknown:
        _create(gateway, "p_x", "nope")
    assert unknown.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "known profiles: default, coach, broken, clashing" in unknown.value.details()
    with pytest.raises(grpc.RpcError) as bad:
        _create(gateway, "p_y", "broken")
    assert bad.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "profile 'broken' names the platform tool 'teleport'" in bad.value.details()


def test_the_owner_switches_the_profile_and_the_next_run_uses_it(gateway: Gateway) -> None:
    _create(gateway, "g_team", "", members=("bob",))
    after = gateway.head()
    request = mind_pb2.SetConversationProfileRequest(
        on_behalf_of=gateway.who("bob"), conversation_key="g_team", profile="coach"
    )
    with pytest.raises(grpc.RpcError) as member:
        gateway.stub.SetConversationProfile(request, metadata=gateway.md, timeout=10)
    assert member.value.code() is grpc.StatusCode.PERMISSION_DENIED
    request.on_behalf_of.CopyFrom(gateway.who("alice"))
    changed = gateway.stub.SetConversationProfile(request, metadata=gateway.md, timeout=10)
    assert changed.conversation.profile == "coach"
    events = gateway.wait_for(after, lambda evs: payloads(evs, "conversation_changed"))
    assert payloads(events, "conversation_changed")[0].profile == "coach"
    assert _run(gateway, "g_team", "coach the team").state == common_pb2.RUN_STATE_COMPLETED
    listed = gateway.stub.ListProfiles(
        mind_pb2.ListProfilesRequest(on_behalf_of=gateway.who("alice")),
        metadata=gateway.md,
        timeout=10,
    )
    by_name = {p.name: p for p in listed.profiles}
    assert by_name["default"].is_default and list(by_name["coach"].platform_tools) == [
        "current_time"
    ]


def test_the_owner_sets_the_active_hand_and_it_is_announced(gateway: Gateway) -> None:
    _create(gateway, "p_hands", "")
    after = gateway.head()
    request = mind_pb2.SetActiveHandRequest(
        on_behalf_of=gateway.who("alice"), conversation_key="p_hands", hand="laptop"
    )
    chosen = gateway.stub.SetActiveHand(request, metadata=gateway.md, timeout=10)
    assert chosen.conversation.active_hand == "laptop"
    events = gateway.wait_for(after, lambda evs: payloads(evs, "conversation_changed"))
    assert payloads(events, "conversation_changed")[0].active_hand == "laptop"
