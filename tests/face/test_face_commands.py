"""Each client command becomes its Mind call on behalf of the client, and the reply carries the
Mind's answer rendered for the connection's detail mode (or the Mind's status as an error)."""

from __future__ import annotations

from typing import Any

import pytest

from face.commands import CommandRouter
from face.connection import Connection, Identity
from face.errors import MindCallError
from face.feed import EventFeed
from face.projection import SUMMARY, TRANSPARENT, AdmissionModes
from tobe.v1 import common_pb2, events_pb2, face_pb2, mind_pb2

ALICE = Identity("alice", ("chat", "approve"), "cred-a")
WHO = mind_pb2.OnBehalfOf(principal="alice", scopes=["chat", "approve"], credential_id="cred-a")
TOOL = common_pb2.ToolProjection(
    tool_call_id="call-1",
    admitted_mode=TRANSPARENT,
    shown_mode=TRANSPARENT,
    arguments_json='{"path": "secret.txt"}',
    result_text="the secret",
)
CONVERSATION = common_pb2.Conversation(key="p_k", owner="alice")
COMPACTION = events_pb2.ContextCompacted(
    generation=1,
    through_message_id=12,
    messages_summarised=10,
    tokens_before=5_000,
    tokens_after=900,
    trigger=events_pb2.COMPACTION_TRIGGER_REQUESTED,
    summary_calls=1,
)

PAIRING = common_pb2.PairingCode(code="ABCDE-12345", principal="alice")


# What the stand-in Mind answers, by call.
ANSWERS: dict[str, Any] = {
    "CreateConversation": mind_pb2.CreateConversationResponse(conversation=CONVERSATION),
    "ListConversations": mind_pb2.ListConversationsResponse(conversations=[CONVERSATION]),
    "SendChat": mind_pb2.SendChatResponse(message_id=3, run_id="run-1"),
    "CancelRun": mind_pb2.CancelRunResponse(run_id="run-1"),
    "CompactConversation": mind_pb2.CompactConversationResponse(compaction=COMPACTION),
    "GetSnapshot": mind_pb2.GetSnapshotResponse(
        conversation=CONVERSATION, tools=[TOOL], last_event_id=9
    ),
    "GetHistory": mind_pb2.GetHistoryResponse(tools=[TOOL], next_after_message_id=4),
    "DecideApproval": mind_pb2.DecideApprovalResponse(approval=common_pb2.Approval(id="ap-1")),
    "ListActions": mind_pb2.ListActionsResponse(pending=[common_pb2.PendingAction(id="act_1")]),
    "DecideAction": mind_pb2.DecideActionResponse(
        action=common_pb2.PendingAction(id="act_1"), run_id="r"
    ),
    "CreatePairingCode": mind_pb2.CreatePairingCodeResponse(pairing=PAIRING),
}


class RecordingMind:
    """Stands in for the MindClient: answers each call and remembers what it was asked."""

    def __init__(self, failure: MindCallError | None = None) -> None:
        self.requests: list[Any] = []
        self.responses: list[Any] = []
        self._failure = failure

    async def call(self, method: str, request: Any, *, timeout: float | None = None) -> Any:
        self.requests.append(request)
        if self._failure is not None:
            raise self._failure
        response = ANSWERS[method]
        self.responses.append(response)
        return response


def router(
    mind: RecordingMind, mode: int, web_base_url: str = ""
) -> tuple[CommandRouter, Connection]:
    connection = Connection(ALICE, mode, capacity=8)
    feed = EventFeed(mind, AdmissionModes())  # type: ignore[arg-type]
    return CommandRouter(connection, mind, feed, web_base_url), connection  # type: ignore[arg-type]


async def answer(
    mind: RecordingMind, request: face_pb2.ConnectRequest, mode: int = TRANSPARENT
) -> face_pb2.Reply:
    commands, connection = router(mind, mode)
    await commands.handle(request)
    frame = face_pb2.ConnectResponse.FromString((await connection.queue.get()).body)
    assert frame.reply.request_id == request.request_id
    return frame.reply


COMMANDS = [
    (
        face_pb2.ConnectRequest(
            create_conversation=face_pb2.CreateConversationCommand(
                key="p_k", title="plans", members=["bob"]
            )
        ),
        mind_pb2.CreateConversationRequest(
            on_behalf_of=WHO, key="p_k", title="plans", members=["bob"]
        ),
    ),
    (
        face_pb2.ConnectRequest(list_conversations=face_pb2.ListConversationsCommand(limit=7)),
        mind_pb2.ListConversationsRequest(on_behalf_of=WHO, limit=7),
    ),
    (
        face_pb2.ConnectRequest(
            send_chat=face_pb2.SendChatCommand(
                conversation_key="p_k", text="hi", idempotency_key="i-1", steer=True
            )
        ),
        mind_pb2.SendChatRequest(
            on_behalf_of=WHO,
            conversation_key="p_k",
            text="hi",
            idempotency_key="i-1",
            steer=True,
            detail_mode=TRANSPARENT,
        ),
    ),
    (
        face_pb2.ConnectRequest(cancel_run=face_pb2.CancelRunCommand(conversation_key="p_k")),
        mind_pb2.CancelRunRequest(on_behalf_of=WHO, conversation_key="p_k"),
    ),
    (
        face_pb2.ConnectRequest(compact=face_pb2.CompactCommand(conversation_key="p_k")),
        mind_pb2.CompactConversationRequest(on_behalf_of=WHO, conversation_key="p_k"),
    ),
    (
        face_pb2.ConnectRequest(
            snapshot=face_pb2.SnapshotCommand(conversation_key="p_k", message_limit=20)
        ),
        mind_pb2.GetSnapshotRequest(
            on_behalf_of=WHO,
            conversation_key="p_k",
            message_limit=20,
            detail_mode=TRANSPARENT,
        ),
    ),
    (
        face_pb2.ConnectRequest(
            replay=face_pb2.ReplayCommand(conversation_key="p_k", after_message_id=2, limit=50)
        ),
        mind_pb2.GetHistoryRequest(
            on_behalf_of=WHO,
            conversation_key="p_k",
            after_message_id=2,
            limit=50,
            detail_mode=TRANSPARENT,
        ),
    ),
    (
        face_pb2.ConnectRequest(
            decide_approval=face_pb2.DecideApprovalCommand(
                approval_id="ap-1", decision=common_pb2.APPROVAL_DECISION_DENY, reason="no"
            )
        ),
        mind_pb2.DecideApprovalRequest(
            on_behalf_of=WHO,
            approval_id="ap-1",
            decision=common_pb2.APPROVAL_DECISION_DENY,
            reason="no",
        ),
    ),
    (
        face_pb2.ConnectRequest(
            list_actions=face_pb2.ListActionsCommand(conversation_key="p_k", include_ended=True)
        ),
        mind_pb2.ListActionsRequest(on_behalf_of=WHO, conversation_key="p_k", include_ended=True),
    ),
    (
        face_pb2.ConnectRequest(
            decide_action=face_pb2.DecideActionCommand(
                action_id="act_1",
                decision=common_pb2.ACTION_DECISION_AMEND,
                amendment="only the kitchen",
                idempotency_key="d-1",
            )
        ),
        mind_pb2.DecideActionRequest(
            on_behalf_of=WHO,
            action_id="act_1",
            decision=common_pb2.ACTION_DECISION_AMEND,
            amendment="only the kitchen",
            idempotency_key="d-1",
        ),
    ),
]


@pytest.mark.parametrize(
    ("request_frame", "mind_request"), COMMANDS, ids=lambda value: type(value).__name__
)
async def test_a_command_becomes_its_mind_call_and_the_reply_carries_the_answer(
    request_frame: face_pb2.ConnectRequest, mind_request: Any
) -> None:
    mind = RecordingMind()
    request_frame.request_id = "r1"
    reply = await answer(mind, request_frame)
    assert mind.requests == [mind_request]
    kind = request_frame.WhichOneof("frame")
    assert reply.WhichOneof("result") == kind
    assert getattr(reply, kind) == mind.responses[0]


async def test_snapshot_and_replay_replies_are_rendered_for_a_summary_connection() -> None:
    mind = RecordingMind()
    snapshot = await answer(
        mind,
        face_pb2.ConnectRequest(
            request_id="r1", snapshot=face_pb2.SnapshotCommand(conversation_key="p_k")
        ),
        SUMMARY,
    )
    replay = await answer(
        mind,
        face_pb2.ConnectRequest(
            request_id="r2", replay=face_pb2.ReplayCommand(conversation_key="p_k")
        ),
        SUMMARY,
    )
    assert [request.detail_mode for request in mind.requests] == [SUMMARY, SUMMARY]
    for tools in (snapshot.snapshot.tools, replay.replay.tools):
        (tool,) = tools
        assert tool.shown_mode == SUMMARY
        assert not tool.arguments_json and not tool.result_text
    assert snapshot.snapshot.last_event_id == 9
    assert replay.replay.next_after_message_id == 4


async def test_a_mind_refusal_is_the_command_error_with_its_status_number() -> None:
    mind = RecordingMind(MindCallError("NOT_FOUND", "no conversation p_k"))
    reply = await answer(
        mind,
        face_pb2.ConnectRequest(
            request_id="r1", cancel_run=face_pb2.CancelRunCommand(conversation_key="p_k")
        ),
    )
    assert reply.WhichOneof("result") == "error"
    assert (reply.error.code, reply.error.message) == (5, "no conversation p_k")


async def test_a_compact_without_a_conversation_key_is_refused_without_a_mind_call() -> None:
    mind = RecordingMind()
    reply = await answer(
        mind, face_pb2.ConnectRequest(request_id="r1", compact=face_pb2.CompactCommand())
    )
    assert mind.requests == []
    assert reply.WhichOneof("result") == "error"
    assert (reply.error.code, reply.error.message) == (
        3,
        "conversation_key is required: name the conversation to compact",
    )


@pytest.mark.parametrize(
    ("web_base_url", "url"),
    [("http://127.0.0.1:7421/", "http://127.0.0.1:7421/#pair=ABCDE-12345"), ("", "")],
)
async def test_pair_device_makes_a_code_for_the_connections_principal_with_its_link(
    web_base_url: str, url: str
) -> None:
    mind = RecordingMind()
    commands, connection = router(mind, TRANSPARENT, web_base_url)
    request = face_pb2.ConnectRequest(
        request_id="p", pair_device=face_pb2.PairDeviceCommand(ttl_seconds=120)
    )
    await commands.handle(request)
    reply = face_pb2.ConnectResponse.FromString((await connection.queue.get()).body).reply
    assert mind.requests == [mind_pb2.CreatePairingCodeRequest(on_behalf_of=WHO, ttl_seconds=120)]
    assert reply.request_id == "p"
    assert reply.pair_device.pairing == PAIRING
    assert reply.pair_device.url == url
