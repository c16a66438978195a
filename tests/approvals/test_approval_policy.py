"""The deterministic policy: defaults by effect, configured rules, the trust rule."""

from __future__ import annotations

import pytest
from approval_calls import MakeCall

from mind.approvals.policy import Policy
from mind.tools.authorizer import VerdictKind
from mind.tools.base import Effect
from tobe.config import ApprovalRule, ApprovalSettings

LOW_TRUST = {"workspace_write": False, "reply": True, "retrieval_media": True}
HIGH_TRUST = {"workspace_write": True, "reply": True}


@pytest.mark.parametrize(
    ("effect", "expected"),
    [
        (Effect.READ_ONLY, VerdictKind.ALLOW),
        (Effect.WORKSPACE_WRITE, VerdictKind.ASK),
        (Effect.EXTERNAL_SIDE_EFFECT, VerdictKind.ASK),
        (Effect.UNKNOWN, VerdictKind.ASK),
    ],
)
def test_safe_defaults_allow_reads_and_ask_for_everything_else(
    call: MakeCall, effect: Effect, expected: VerdictKind
) -> None:
    verdict = Policy(ApprovalSettings()).evaluate(call(effect=effect))
    assert verdict.kind is expected
    assert verdict.rule == f"default.{effect.value}"


@pytest.mark.parametrize("effect", [Effect.WORKSPACE_WRITE, Effect.UNKNOWN])
def test_low_trust_run_is_denied_workspace_writes_not_asked(call: MakeCall, effect: Effect) -> None:
    verdict = Policy(ApprovalSettings()).evaluate(call(effect=effect, run_permissions=LOW_TRUST))
    assert verdict.kind is VerdictKind.DENY
    assert verdict.rule == "trust"
    assert "may not write to the workspace" in verdict.reason


def test_trust_rule_wins_over_a_configured_allow(call: MakeCall) -> None:
    settings = ApprovalSettings(
        rules=[ApprovalRule(tool="*", verdict="allow")], workspace_write="allow"
    )
    verdict = Policy(settings).evaluate(call(run_permissions=LOW_TRUST))
    assert verdict.kind is VerdictKind.DENY


def test_observation_permissions_without_the_write_flag_count_as_no_write(
    call: MakeCall,
) -> None:
    verdict = Policy(ApprovalSettings()).evaluate(call(run_permissions={"reply": True}))
    assert verdict.kind is VerdictKind.DENY


def test_a_run_without_the_write_permission_keeps_reads_and_asks_for_side_effects(
    call: MakeCall,
) -> None:
    policy = Policy(ApprovalSettings())
    read = policy.evaluate(call(effect=Effect.READ_ONLY, run_permissions=LOW_TRUST))
    side = policy.evaluate(call(effect=Effect.EXTERNAL_SIDE_EFFECT, run_permissions=LOW_TRUST))
    assert (read.kind, side.kind) == (VerdictKind.ALLOW, VerdictKind.ASK)


def test_high_trust_run_follows_the_normal_policy(call: MakeCall) -> None:
    verdict = Policy(ApprovalSettings()).evaluate(call(run_permissions=HIGH_TRUST))
    assert verdict.kind is VerdictKind.ASK


def test_first_matching_rule_decides_with_its_reason(call: MakeCall) -> None:
    settings = ApprovalSettings(
        rules=[
            ApprovalRule(tool="shell_*", hand="laptop", verdict="deny", reason="no shell here"),
            ApprovalRule(tool="shell_*", verdict="allow"),
            ApprovalRule(effect="workspace_write", principal="alice", verdict="allow"),
        ]
    )
    policy = Policy(settings)
    on_laptop = policy.evaluate(call(tool="shell_run", effect=Effect.EXTERNAL_SIDE_EFFECT))
    elsewhere = policy.evaluate(
        call(tool="shell_run", effect=Effect.EXTERNAL_SIDE_EFFECT, hand_id="server")
    )
    alice_write = policy.evaluate(call())
    bob_write = policy.evaluate(call(principal="bob"))
    assert (on_laptop.kind, on_laptop.reason, on_laptop.rule) == (
        VerdictKind.DENY,
        "no shell here",
        "rules[0]",
    )
    assert (elsewhere.kind, elsewhere.rule) == (VerdictKind.ALLOW, "rules[1]")
    assert (alice_write.kind, alice_write.rule) == (VerdictKind.ALLOW, "rules[2]")
    assert (bob_write.kind, bob_write.rule) == (VerdictKind.ASK, "default.workspace_write")


def test_rule_can_match_a_conversation(call: MakeCall) -> None:
    settings = ApprovalSettings(rules=[ApprovalRule(conversation="p_*", verdict="deny")])
    policy = Policy(settings)
    assert policy.evaluate(call(conversation_key="p_mine")).kind is VerdictKind.DENY
    assert policy.evaluate(call(conversation_key="g_team")).kind is VerdictKind.ASK


def test_default_deny_explains_itself_to_the_model(call: MakeCall) -> None:
    verdict = Policy(ApprovalSettings(external_side_effect="deny")).evaluate(
        call(tool="send_mail", effect=Effect.EXTERNAL_SIDE_EFFECT)
    )
    assert verdict.kind is VerdictKind.DENY
    assert "send_mail" in verdict.reason


def test_rules_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, call: MakeCall) -> None:
    from tobe.config import load_settings

    monkeypatch.setenv("TOBE_CONFIG", "/nonexistent/config.toml")
    monkeypatch.setenv("TOBE_APPROVALS__RULES", '[{"tool": "write_note", "verdict": "allow"}]')
    monkeypatch.setenv("TOBE_APPROVALS__EXTERNAL_SIDE_EFFECT", "deny")
    settings = load_settings().approvals
    policy = Policy(settings)
    assert policy.evaluate(call()).kind is VerdictKind.ALLOW
    assert policy.evaluate(call(tool="x", effect=Effect.EXTERNAL_SIDE_EFFECT)).kind is (
        VerdictKind.DENY
    )


def test_unknown_rule_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="verdikt"):
        ApprovalSettings.model_validate({"rules": [{"tool": "x", "verdikt": "allow"}]})
