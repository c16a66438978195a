"""Views keep their durable events' JSON: payloads already in the outbox read back into views,
and what a view writes reads back equal."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mind.api.events import durable_event
from mind.events.views import (
    ApprovalView,
    ConversationView,
    CredentialRevokedView,
    MessageRole,
    MessageView,
    QueuedView,
    RunState,
    RunView,
    ToolCallRef,
    ToolStatus,
    ToolView,
)
from mind.store.models import OutboxEvent
from mind.tools.authorizer import Decision
from mind.tools.base import DetailMode, Effect
from mind.wire import convert

AT = datetime(2026, 12, 3, 10, 11, 12, 345678, tzinfo=UTC)
STAMP = "2026-12-03T10:11:12.345678+00:00"

# Payloads as the outbox holds them: only the keys of a message's role (`thinking` only when
# rendered transparent), raw tool keys only when shown transparent, approvals with their
# decider (which the contract does not carry) or from before decision texts were kept.
STORED: list[tuple[type[Any], dict[str, Any], Any]] = [
    (
        MessageView,
        {
            "id": 3,
            "conversation_key": "p_x",
            "role": "assistant",
            "text": "Let me check.",
            "run_id": "run_1",
            "created_at": STAMP,
            "admitted_mode": "summary",
            "tool_calls": [{"id": "call_1", "name": "current_time"}],
        },
        MessageView(
            id=3,
            conversation_key="p_x",
            role=MessageRole.ASSISTANT,
            text="Let me check.",
            run_id="run_1",
            created_at=AT,
            admitted_mode=DetailMode.SUMMARY,
            tool_calls=(ToolCallRef(id="call_1", name="current_time"),),
        ),
    ),
    (
        MessageView,
        {
            "id": 4,
            "conversation_key": "p_x",
            "role": "tool",
            "text": '{"utc": "..."}',
            "run_id": "run_1",
            "created_at": STAMP,
            "admitted_mode": "transparent",
            "tool_call_id": "call_1",
            "result_summary": "ok, 14 bytes",
            "is_error": False,
        },
        MessageView(
            id=4,
            conversation_key="p_x",
            role=MessageRole.TOOL,
            text='{"utc": "..."}',
            run_id="run_1",
            created_at=AT,
            admitted_mode=DetailMode.TRANSPARENT,
            tool_call_id="call_1",
            result_summary="ok, 14 bytes",
        ),
    ),
    (
        MessageView,
        {
            "id": 2,
            "conversation_key": "p_x",
            "role": "user",
            "text": "time please",
            "run_id": "run_1",
            "created_at": STAMP,
            "admitted_mode": "",
            "idempotency_key": "k1",
        },
        MessageView(
            id=2,
            conversation_key="p_x",
            role=MessageRole.USER,
            text="time please",
            run_id="run_1",
            created_at=AT,
            admitted_mode=None,
            idempotency_key="k1",
        ),
    ),
    (
        ToolView,
        {
            "tool_call_id": "call_1",
            "conversation_key": "p_x",
            "run_id": "run_1",
            "tool": "current_time",
            "admitted_mode": "summary",
            "shown_mode": "summary",
            "arguments_summary": "timezone=<3 chars>",
            "status": "running",
            "result_summary": "",
            "admitted_at": STAMP,
            "finished_at": "",
            "hand_id": "",
            "projection_version": 1,
        },
        ToolView(
            tool_call_id="call_1",
            conversation_key="p_x",
            run_id="run_1",
            tool="current_time",
            admitted_mode=DetailMode.SUMMARY,
            shown_mode=DetailMode.SUMMARY,
            arguments_summary="timezone=<3 chars>",
            status=ToolStatus.RUNNING,
            result_summary="",
            admitted_at=AT,
            finished_at=None,
            hand_id="",
            projection_version=1,
        ),
    ),
    (
        RunView,
        {
            "id": "run_1",
            "conversation_key": "p_x",
            "state": "completed",
            "reason": "",
            "admitted_mode": "transparent",
            "started_at": STAMP,
            "finished_at": STAMP,
            "trigger": "user",
        },
        RunView(
            id="run_1",
            conversation_key="p_x",
            state=RunState.COMPLETED,
            reason="",
            admitted_mode=DetailMode.TRANSPARENT,
            started_at=AT,
            finished_at=AT,
            trigger="user",
        ),
    ),
    (
        QueuedView,
        {"run_id": "", "steer": False, "text": "later", "idempotency_key": "k2", "input_id": 5},
        QueuedView(run_id="", steer=False, text="later", idempotency_key="k2", input_id=5),
    ),
    (
        ConversationView,
        {
            "key": "g_team",
            "title": "Team",
            "owner": "alice",
            "members": ["bob"],
            "created_at": STAMP,
            "last_event_id": 0,
        },
        ConversationView(
            key="g_team",
            title="Team",
            owner="alice",
            members=("bob",),
            created_at=AT,
            last_event_id=0,
        ),
    ),
    (
        ApprovalView,
        {
            "id": "ap_1",
            "conversation_key": "p_x",
            "run_id": "run_1",
            "tool_call_id": "call_1",
            "tool": "laptop__run_command",
            "effect": "external_side_effect",
            "hand_id": "laptop",
            "arguments_summary": "command=<2 chars>",
            "arguments_json": "",
            "arguments_digest": "ab",
            "decision": "deny",
            "decided_by": "alice",
            "decision_reason": "not now",
            "requested_at": STAMP,
            "expires_at": STAMP,
            "decided_at": STAMP,
            "reason": "external side effect",
            "decision_text": "run ls",
        },
        ApprovalView(
            id="ap_1",
            conversation_key="p_x",
            run_id="run_1",
            tool_call_id="call_1",
            tool="laptop__run_command",
            effect=Effect.EXTERNAL_SIDE_EFFECT,
            hand_id="laptop",
            arguments_summary="command=<2 chars>",
            arguments_json="",
            arguments_digest="ab",
            decision=Decision.DENY,
            requested_at=AT,
            expires_at=AT,
            reason="external side effect",
            decision_text="run ls",
        ),
    ),
    (
        ApprovalView,
        {
            "id": "ap_0",
            "conversation_key": "p_x",
            "run_id": "run_1",
            "tool_call_id": "call_0",
            "tool": "write_file",
            "effect": "unknown",
            "hand_id": "",
            "arguments_summary": "path=<5 chars>",
            "arguments_json": '{"path":"a.txt"}',
            "arguments_digest": "cd",
            "decision": "",
            "decided_by": "",
            "decision_reason": "",
            "requested_at": STAMP,
            "expires_at": STAMP,
            "decided_at": "",
            "reason": "undeclared effect",
        },
        ApprovalView(
            id="ap_0",
            conversation_key="p_x",
            run_id="run_1",
            tool_call_id="call_0",
            tool="write_file",
            effect=Effect.UNKNOWN,
            hand_id="",
            arguments_summary="path=<5 chars>",
            arguments_json='{"path":"a.txt"}',
            arguments_digest="cd",
            decision=None,
            requested_at=AT,
            expires_at=AT,
            reason="undeclared effect",
            decision_text="",
        ),
    ),
    (
        CredentialRevokedView,
        {"credential_id": "cred_1", "principal": "alice"},
        CredentialRevokedView(credential_id="cred_1", principal="alice"),
    ),
]
# Approval payloads named their decider, which the Approval contract does not carry.
UNCARRIED = {"decided_by", "decision_reason", "decided_at"}
IDS = [f"{kind.__name__}-{i}" for i, (kind, _, _) in enumerate(STORED)]


@pytest.mark.parametrize(("kind", "payload", "view"), STORED, ids=IDS)
def test_a_stored_payload_reads_back_into_its_view(
    kind: type[Any], payload: dict[str, Any], view: Any
) -> None:
    assert kind.from_payload(payload) == view


@pytest.mark.parametrize(("kind", "payload", "view"), STORED, ids=IDS)
def test_a_view_reads_back_equal_from_the_payload_it_writes(
    kind: type[Any], payload: dict[str, Any], view: Any
) -> None:
    assert kind.from_payload(view.to_payload()) == view


@pytest.mark.parametrize(("kind", "payload", "view"), STORED, ids=IDS)
def test_a_view_writes_the_stored_keys_with_the_same_values(
    kind: type[Any], payload: dict[str, Any], view: Any
) -> None:
    written = view.to_payload()
    both = payload.keys() & written.keys()
    assert {key: written[key] for key in both} == {key: payload[key] for key in both}
    assert payload.keys() - both <= UNCARRIED


def test_a_stored_message_event_replays_as_its_view_on_the_wire() -> None:
    _, payload, view = STORED[0]
    row = OutboxEvent(
        id=9,
        type="message_appended",
        conversation_key="p_x",
        audience=["alice"],
        payload=payload,
        created_at=AT,
    )
    event = durable_event(row)
    assert event.WhichOneof("payload") == "message_appended"
    assert event.message_appended == convert.message_to_proto(view)
    assert (event.durable_id, event.conversation_key, list(event.audience)) == (9, "p_x", ["alice"])


def test_an_event_of_a_type_this_release_does_not_know_replays_without_a_payload() -> None:
    row = OutboxEvent(
        id=10, type="later_kind", conversation_key="", audience=[], payload={"x": 1}, created_at=AT
    )
    assert durable_event(row).WhichOneof("payload") is None
