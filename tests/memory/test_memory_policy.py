"""The approval policy's `memory` default: the Mind's memory writes ask nobody, yet stay writes."""

from __future__ import annotations

from mind.approvals.policy import Policy
from mind.tools.authorizer import CallUnderReview, VerdictKind
from mind.tools.base import DetailMode, Effect
from tobe.config import ApprovalRule, ApprovalSettings


def call(
    tool: str, *, hand_id: str = "", permissions: dict[str, bool] | None = None
) -> CallUnderReview:
    return CallUnderReview(
        tool=tool,
        effect=Effect.WORKSPACE_WRITE,
        hand_id=hand_id,
        arguments={"key": "diet"},
        conversation_key="p_x",
        run_id="run_1",
        tool_call_id="call_1",
        principal="alice",
        detail_mode=DetailMode.TRANSPARENT,
        decision_text="",
        run_permissions=permissions or {},
    )


def test_memory_writes_and_deletes_are_allowed_by_default_without_asking() -> None:
    policy = Policy(ApprovalSettings())

    for tool in ("memory_write", "memory_delete"):
        verdict = policy.evaluate(call(tool))
        assert (verdict.kind, verdict.rule) == (VerdictKind.ALLOW, "default.memory")


def test_a_low_trust_run_may_not_change_memory() -> None:
    verdict = Policy(ApprovalSettings()).evaluate(
        call("memory_write", permissions={"workspace_write": False})
    )
    assert (verdict.kind, verdict.rule) == (VerdictKind.DENY, "trust")


def test_a_rule_or_the_memory_setting_can_make_memory_writes_ask() -> None:
    by_rule = ApprovalSettings(rules=[ApprovalRule(tool="memory_*", verdict="ask")])
    by_default = ApprovalSettings(memory="ask")

    assert Policy(by_rule).evaluate(call("memory_write")).kind is VerdictKind.ASK
    assert Policy(by_default).evaluate(call("memory_write")).kind is VerdictKind.ASK


def test_a_hand_tool_named_like_a_memory_tool_gets_the_workspace_write_default() -> None:
    verdict = Policy(ApprovalSettings()).evaluate(call("memory_write", hand_id="laptop"))
    assert (verdict.kind, verdict.rule) == (VerdictKind.ASK, "default.workspace_write")
