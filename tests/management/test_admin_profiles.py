"""`tobe admin conversations set-profile KEY PROFILE`: through a running Mind (which runs the
conversation's next reply with the new profile) and offline on the store under the state lock;
audited either way, refusing an unknown profile (naming the known ones) and an unknown key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from admin_mind import mind_running
from admin_store import seed_conversations
from helpers.admin_cli import Admin
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, issue_token

from mind.store.migrate import upgrade
from tobe.v1 import common_pb2, management_pb2, management_pb2_grpc

PERSONA = "You are a running coach."
CONFIG = f"""
[[profiles.profile]]
name = "coach"
persona = "{PERSONA}"
platform_tools = ["current_time"]
"""
SCRIPT = f"""
runs:
  - match: "^coach me"
    steps:
      - {{expect: {{system_contains: "{PERSONA}"}}, text: "coached"}}
  - match: ".*"
    steps:
      - {{text: "echo"}}
"""
UNKNOWN_PROFILE = "no profile 'yoga'; known profiles: default, coach"


@pytest.fixture
def configured(data_dir: Path) -> Admin:
    """`tobe admin` on a migrated store, with `[profiles]`."""
    config = data_dir / "config.toml"
    config.write_text(CONFIG)
    admin = Admin(data_dir, config)
    upgrade(admin.store_url)
    return admin


@pytest.fixture
def seeded(configured: Admin) -> Admin:
    """The same store holding `g_team` (alice's) and `p_bob`, for offline commands."""
    seed_conversations(configured.store_url)
    return configured


@pytest.fixture
def mind(configured: Admin) -> Iterator[MindProcess]:
    script = configured.data_dir / "script.yaml"
    script.write_text(SCRIPT)
    gateway = issue_token(
        configured.store_url, kind="service", principal="face", scopes=["gateway"]
    )
    with mind_running(
        configured.data_dir,
        TOBE_CONFIG=str(configured.config),
        TOBE_PROVIDER__KIND="scripted",
        TOBE_PROVIDER__SCRIPT=str(script),
    ) as process:
        process.gateway_token = gateway
        yield process


def run(gateway: Gateway, key: str, text: str) -> common_pb2.Run:
    after = gateway.head()
    run_id = gateway.send(key, text, f"{key}-{text}").run_id
    events = gateway.wait_runs_ended(after, {run_id})
    return [r for r in payloads(events, "run_changed") if r.id == run_id][-1]


def profile_audit(admin: Admin) -> list[tuple[str, dict[str, str]]]:
    return [
        (e["target"], e["details"]) for e in admin.json("audit", "--action", "conversation.profile")
    ]


def test_an_operator_sets_the_profile_through_the_running_mind_and_its_next_reply_uses_it(
    configured: Admin, mind: MindProcess
) -> None:
    gateway = Gateway.connect(mind)
    try:
        gateway.create("p_runner")
        # A reply on the default profile first: the conversation is loaded when it changes.
        assert run(gateway, "p_runner", "hello").state == common_pb2.RUN_STATE_COMPLETED
        before = run(gateway, "p_runner", "coach me first")
        assert before.state == common_pb2.RUN_STATE_FAILED
        after = gateway.head()
        result = configured.run("--verbose", "conversations", "set-profile", "p_runner", "coach")
        assert "mode: online" in result.stderr
        assert "Conversation p_runner now runs with profile coach" in result.stdout
        events = gateway.wait_for(after, lambda evs: payloads(evs, "conversation_changed"))
        assert [c.profile for c in payloads(events, "conversation_changed")] == ["coach"]
        coached = run(gateway, "p_runner", "coach me now")
        assert coached.state == common_pb2.RUN_STATE_COMPLETED, coached.reason
    finally:
        gateway.close()
    shown = configured.json("conversations", "show", "p_runner")
    assert shown["conversation"]["profile"] == "coach"
    assert profile_audit(configured) == [("p_runner", {"profile": "coach"})]


def test_the_running_mind_refuses_an_unknown_profile_or_key_and_audits_neither(
    configured: Admin, mind: MindProcess
) -> None:
    gateway = Gateway.connect(mind)
    try:
        gateway.create("p_team")
    finally:
        gateway.close()
    unknown = configured.run("conversations", "set-profile", "p_team", "yoga", ok=False)
    assert UNKNOWN_PROFILE in unknown.stderr
    missing = configured.run("conversations", "set-profile", "p_nobody", "coach", ok=False)
    assert "no conversation 'p_nobody'" in missing.stderr
    with grpc.insecure_channel(f"unix:{configured.data_dir / 'mind.sock'}") as channel:
        stub = management_pb2_grpc.ManagementStub(channel)
        for key, profile, code in [
            ("p_team", "yoga", grpc.StatusCode.INVALID_ARGUMENT),
            ("p_nobody", "coach", grpc.StatusCode.NOT_FOUND),
        ]:
            request = management_pb2.ChangeConversationProfileRequest(key=key, profile=profile)
            with pytest.raises(grpc.RpcError) as refused:
                stub.ChangeConversationProfile(request, timeout=30)
            assert refused.value.code() is code
    assert profile_audit(configured) == []
    assert configured.json("conversations", "show", "p_team")["conversation"]["profile"] == (
        "default"
    )


def test_offline_an_operator_sets_the_profile_on_the_store_and_it_is_audited(
    seeded: Admin,
) -> None:
    result = seeded.run("--verbose", "conversations", "set-profile", "g_team", "coach")
    assert "mode: offline" in result.stderr
    assert "Conversation g_team now runs with profile coach" in result.stdout
    shown = seeded.json("conversations", "show", "g_team")
    assert shown["conversation"]["profile"] == "coach"
    assert profile_audit(seeded) == [("g_team", {"profile": "coach"})]
    # Back to the default by naming it.
    changed = seeded.json("conversations", "set-profile", "g_team", "default")
    assert (changed["key"], changed["profile"]) == ("g_team", "default")
    assert [details for _, details in profile_audit(seeded)] == [
        {"profile": "default"},
        {"profile": "coach"},
    ]


def test_offline_an_unknown_profile_or_key_is_refused_and_not_audited(seeded: Admin) -> None:
    unknown = seeded.run("conversations", "set-profile", "g_team", "yoga", ok=False)
    assert UNKNOWN_PROFILE in unknown.stderr
    missing = seeded.run("conversations", "set-profile", "p_nobody", "coach", ok=False)
    assert "no conversation 'p_nobody'" in missing.stderr
    assert profile_audit(seeded) == []
    # Unchanged: the seeded row names no profile (the default).
    assert seeded.json("conversations", "show", "g_team")["conversation"]["profile"] == ""
