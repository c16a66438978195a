"""How the trust of the observation that triggered a run limits its calls, and how rules name
adapter actions: the policy alone, then the Authorizer over a real store (grants, requests),
and the trust a continuation run keeps."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from approval_calls import OWNER, MakeCall, make_call
from helpers.eventually import eventually_async

from mind.approvals.authorizer import ApprovalAuthorizer
from mind.approvals.broker import ApprovalBroker
from mind.approvals.grants import GrantCache
from mind.approvals.policy import Policy
from mind.conversation.continuation import origin_of
from mind.conversation.runs import trust_of
from mind.store.database import Database
from mind.store.models import Approval, Run, ToolProjection
from mind.store.write_tx import WriteTx
from mind.tools.authorizer import CallUnderReview, Decision, VerdictKind
from mind.tools.base import Effect
from tobe.config import ApprovalRule, ApprovalSettings

NOT_READ_ONLY = [Effect.WORKSPACE_WRITE, Effect.EXTERNAL_SIDE_EFFECT, Effect.UNKNOWN]
LOW = {"workspace_write": False, "reply": True, "retrieval_media": True}
MEDIUM = {**LOW, "generated_media": True, "channel_operations": True}
HIGH = {**MEDIUM, "workspace_write": True}
ORIGIN = "a medium-trust observation from email@work (INBOX)"
ALLOW_ALL = ApprovalSettings(
    rules=[ApprovalRule(tool="*", verdict="allow")],
    workspace_write="allow",
    external_side_effect="allow",
    unknown="allow",
)


def adapter_call(name: str = "email@work.send", **overrides: object) -> CallUnderReview:
    """A call of an adapter's write action, named as the awareness tool names it."""
    instance, _, action = name.rpartition(".")
    values: dict[str, object] = {
        "tool": name,
        "aliases": (f"{instance.partition('@')[0]}.{action}", "awareness_interact"),
        "effect": Effect.EXTERNAL_SIDE_EFFECT,
        "hand_id": "",
        "arguments": {"adapter_id": "a1", "action": action, "args": {"text": "hi"}},
    }
    values.update(overrides)
    return make_call(**values)


@pytest.mark.parametrize("trust", ["low", "off", "unspecified"])
@pytest.mark.parametrize("effect", NOT_READ_ONLY)
def test_a_low_trust_run_is_denied_every_call_that_is_not_read_only_even_by_an_allow_rule(
    call: MakeCall, trust: str, effect: Effect
) -> None:
    verdict = Policy(ALLOW_ALL).evaluate(call(effect=effect, run_trust=trust, run_permissions=LOW))
    assert (verdict.kind, verdict.rule) == (VerdictKind.DENY, "trust")
    assert f"{trust}-trust observation, so it may only read" in verdict.reason


def test_a_low_trust_run_still_reads(call: MakeCall) -> None:
    verdict = Policy(ApprovalSettings()).evaluate(
        call(effect=Effect.READ_ONLY, run_trust="low", run_permissions=LOW)
    )
    assert verdict.kind is VerdictKind.ALLOW


def test_a_medium_trust_run_may_not_write_but_its_side_effects_follow_the_rules(
    call: MakeCall,
) -> None:
    policy = Policy(ALLOW_ALL)
    write = policy.evaluate(call(run_trust="medium", run_permissions=MEDIUM))
    unknown = policy.evaluate(
        call(effect=Effect.UNKNOWN, run_trust="medium", run_permissions=MEDIUM)
    )
    side = policy.evaluate(
        call(effect=Effect.EXTERNAL_SIDE_EFFECT, run_trust="medium", run_permissions=MEDIUM)
    )
    assert (write.kind, write.rule, unknown.kind) == (VerdictKind.DENY, "trust", VerdictKind.DENY)
    assert (side.kind, side.rule) == (VerdictKind.ALLOW, "rules[0]")


def test_a_rule_names_an_action_of_every_instance_by_its_adapter_or_one_instance() -> None:
    policy = Policy(
        ApprovalSettings(
            rules=[
                ApprovalRule(tool="telegram.reply", verdict="allow"),
                ApprovalRule(tool="email@home.send", verdict="deny", reason="not from home"),
                ApprovalRule(tool="email.send", verdict="ask", reason="mail leaves the house"),
            ],
            external_side_effect="allow",
        )
    )
    reply = policy.evaluate(adapter_call("telegram@family.reply"))
    work = policy.evaluate(adapter_call("email@work.send"))
    home = policy.evaluate(adapter_call("email@home.send"))
    other = policy.evaluate(adapter_call("email@work.archive"))
    assert (reply.kind, reply.rule) == (VerdictKind.ALLOW, "rules[0]")
    assert (home.kind, home.reason) == (VerdictKind.DENY, "not from home")
    assert (work.kind, work.reason) == (VerdictKind.ASK, "mail leaves the house")
    assert (other.kind, other.rule) == (VerdictKind.ALLOW, "default.external_side_effect")


def test_a_rule_on_the_tool_name_still_covers_every_action_it_reaches() -> None:
    policy = Policy(ApprovalSettings(rules=[ApprovalRule(tool="awareness_*", verdict="deny")]))
    assert policy.evaluate(adapter_call()).kind is VerdictKind.DENY


class Harness:
    def __init__(self, database: Database, broker: ApprovalBroker) -> None:
        self.database = database
        self.broker = broker
        self.authorizer = self.with_settings(ApprovalSettings())

    def with_settings(self, settings: ApprovalSettings) -> ApprovalAuthorizer:
        return ApprovalAuthorizer(
            policy=Policy(settings),
            broker=self.broker,
            grants=GrantCache(self.database),
            database=self.database,
        )

    async def granted(self, call: CallUnderReview) -> None:
        """A person approves `call` for the conversation."""
        task = asyncio.create_task(self.authorizer.authorize(call))
        [pending] = await eventually_async(
            self.broker.pending, what="the request to grant", interval=0.01
        )
        await self.broker.decide(pending.id, Decision.APPROVE_CONVERSATION, principal=OWNER)
        assert (await task).kind is VerdictKind.ALLOW


@pytest.fixture
async def harness(database: Database, conversation: str) -> AsyncIterator[Harness]:
    broker = ApprovalBroker(database, expiry=600)
    await broker.start()
    try:
        yield Harness(database, broker)
    finally:
        await broker.aclose()


async def test_a_grant_covers_later_calls_of_the_same_action_of_the_same_instance_only(
    harness: Harness,
) -> None:
    await harness.granted(adapter_call(tool_call_id="call_0"))
    same = await harness.authorizer.authorize(adapter_call(tool_call_id="call_1"))
    assert same.kind is VerdictKind.ALLOW
    other = asyncio.create_task(
        harness.authorizer.authorize(adapter_call("email@home.send", tool_call_id="call_2"))
    )
    [asked] = await eventually_async(harness.broker.pending, what="the other instance's request")
    assert asked.tool == "email@home.send"
    other.cancel()
    with pytest.raises(asyncio.CancelledError):
        await other


@pytest.mark.parametrize("effect", NOT_READ_ONLY)
async def test_a_low_trust_run_is_denied_despite_a_grant_and_an_allow_rule_for_the_action(
    harness: Harness, effect: Effect
) -> None:
    await harness.granted(adapter_call(effect=effect, tool_call_id="call_0"))
    allowing = harness.with_settings(
        ApprovalSettings(rules=[ApprovalRule(tool="email.send", verdict="allow")])
    )
    verdict = await allowing.authorize(
        adapter_call(effect=effect, tool_call_id="call_1", run_trust="low", run_permissions=LOW)
    )
    assert verdict.kind is VerdictKind.DENY and "low-trust observation" in verdict.reason
    assert await harness.broker.pending() == []


async def test_a_medium_trust_run_asks_a_person_despite_a_grant_showing_its_origin(
    harness: Harness,
) -> None:
    await harness.granted(adapter_call(tool_call_id="call_0"))
    medium = adapter_call(
        tool_call_id="call_1", run_trust="medium", run_permissions=MEDIUM, run_origin=ORIGIN
    )
    task = asyncio.create_task(harness.authorizer.authorize(medium))
    [asked] = await eventually_async(harness.broker.pending, what="the medium run's request")
    assert (asked.tool_call_id, asked.tool, asked.origin) == ("call_1", "email@work.send", ORIGIN)
    await harness.broker.decide(asked.id, Decision.APPROVE_ONCE, principal=OWNER)
    assert (await task).kind is VerdictKind.ALLOW
    high = adapter_call(tool_call_id="call_2", run_trust="high", run_permissions=HIGH)
    assert (await harness.authorizer.authorize(high)).kind is VerdictKind.ALLOW


@pytest.mark.parametrize(
    ("trigger", "continued_as", "trust"),
    [("observation:medium", "observation:medium", "medium"), ("user", "approval", "")],
)
async def test_a_continuation_run_keeps_the_trust_and_origin_of_the_run_it_continues(
    database: Database, conversation: str, trigger: str, continued_as: str, trust: str
) -> None:
    def interrupted(tx: WriteTx) -> None:
        now = datetime.now(UTC)
        tx.session.add(
            Run(
                id="run_1",
                conversation_key=conversation,
                state="interrupted",
                trigger=trigger,
                detail_mode="summary",
                permissions=MEDIUM,
                origin=ORIGIN,
            )
        )
        tx.session.add(
            ToolProjection(
                tool_call_id="call_1",
                conversation_key=conversation,
                run_id="run_1",
                tool="awareness_interact",
                admitted_mode="summary",
            )
        )
        tx.session.add(
            Approval(
                id="ap_1",
                conversation_key=conversation,
                run_id="run_1",
                tool_call_id="call_1",
                tool="email@work.send",
                effect="external_side_effect",
                arguments_digest="d",
                expires_at=now,
            )
        )

    await database.write(interrupted)
    origin = await database.read(lambda session: origin_of(session, "call_1"))
    assert origin is not None
    assert (origin.trigger, origin.origin, origin.permissions) == (continued_as, ORIGIN, MEDIUM)
    assert trust_of(origin.trigger) == trust
