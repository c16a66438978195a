"""Every Mind call a client may make reaches the Mind through the Face's one forwarding path,
found from the contracts: a Mind call added for clients without its MindCall and MindReply
fields fails here, and each call keeps the gateway's guarantees (the principal and detail mode
the Face vouches for, the scope it checks, the status the Mind answers)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from face.commands import CommandRouter
from face.connection import Connection, Identity
from face.errors import MindCallError
from face.feed import EventFeed
from face.forwarding import FORWARDED, MIND_SERVICE, is_client_call
from face.projection import SUMMARY, TRANSPARENT, AdmissionModes
from tobe.scopes import FACE_COMMANDS, mind_call_scope
from tobe.v1 import common_pb2, face_pb2, mind_pb2

ALICE = Identity("alice", ("chat", "approve", "post"), "cred-a")
WHO = mind_pb2.OnBehalfOf(
    principal="alice", scopes=["chat", "approve", "post"], credential_id="cred-a"
)
MALLORY = mind_pb2.OnBehalfOf(principal="mallory", scopes=["admin"], credential_id="cred-m")
CLIENT_CALLS = [method for method in MIND_SERVICE.methods if is_client_call(method)]


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def response_of(method: str) -> Message:
    return GetMessageClass(MIND_SERVICE.methods_by_name[method].output_type)()


class StandInMind:
    """Answers every call with its response type (or `failure`), remembering what it was asked;
    `held` calls wait for `release`."""

    def __init__(self, failure: MindCallError | None = None, held: str = "") -> None:
        self.calls: list[tuple[str, Message, float | None]] = []
        self.failure = failure
        self.held = held
        self.release = asyncio.Event()

    async def call(self, method: str, request: Message, *, timeout: float | None = None) -> Any:
        self.calls.append((method, request, timeout))
        if method == self.held:
            await self.release.wait()
        if self.failure is not None:
            raise self.failure
        return response_of(method)


def router(
    mind: StandInMind, identity: Identity = ALICE, mode: int = TRANSPARENT
) -> tuple[CommandRouter, Connection]:
    connection = Connection(identity, mode, capacity=16)
    feed = EventFeed(mind, AdmissionModes())  # type: ignore[arg-type]
    return CommandRouter(connection, mind, feed), connection  # type: ignore[arg-type]


async def next_reply(connection: Connection) -> face_pb2.Reply:
    return face_pb2.ConnectResponse.FromString((await connection.queue.get()).body).reply


def mind_frame(field: str, request_id: str = "r1", **values: Any) -> face_pb2.ConnectRequest:
    call = face_pb2.MindCall()
    getattr(call, field).SetInParent()
    request = getattr(call, field)
    request.on_behalf_of.CopyFrom(MALLORY)
    if "conversation_key" in request.DESCRIPTOR.fields_by_name:
        request.conversation_key = "p_k"
    for name, value in values.items():
        setattr(request, name, value)
    return face_pb2.ConnectRequest(request_id=request_id, mind=call)


def test_every_mind_call_made_for_a_client_has_its_mind_frame_and_reply() -> None:
    forwarded = {call.method: field for field, call in FORWARDED.items()}
    assert CLIENT_CALLS, "the Mind serves clients through the Face"
    for method in CLIENT_CALLS:
        assert forwarded.get(method.name) == snake_case(method.name), method.name
        reply_field = face_pb2.MindReply.DESCRIPTOR.fields_by_name[snake_case(method.name)]
        assert reply_field.message_type is method.output_type
    assert set(forwarded) == {method.name for method in CLIENT_CALLS}


def test_the_gateways_own_mind_calls_are_not_forwarded() -> None:
    forwarded = {call.method for call in FORWARDED.values()}
    for method in ("Authenticate", "Subscribe", "RedeemPairingCode", "SignOut", "ReportRevocation"):
        assert method not in forwarded


@pytest.mark.parametrize("method", [call.method for call in FORWARDED.values()])
def test_every_forwarded_call_needs_a_client_scope(method: str) -> None:
    assert mind_call_scope(method) is not None


@pytest.mark.parametrize("frame", sorted(FACE_COMMANDS))
def test_an_older_command_frame_is_copied_into_its_mind_request_without_loss(frame: str) -> None:
    command = face_pb2.ConnectRequest.DESCRIPTOR.fields_by_name[frame].message_type
    request = MIND_SERVICE.methods_by_name[FACE_COMMANDS[frame]].input_type
    for field in command.fields:
        target = request.fields_by_name.get(field.name)
        assert target is not None, f"{command.name}.{field.name} has no field in {request.name}"
        assert (target.type, target.is_repeated) == (field.type, field.is_repeated)
        assert target.message_type is field.message_type
        assert target.enum_type is field.enum_type


@pytest.mark.parametrize("field", sorted(FORWARDED))
async def test_a_mind_frame_is_forwarded_for_the_connections_principal(field: str) -> None:
    mind = StandInMind()
    commands, connection = router(mind, mode=SUMMARY)
    await commands.handle(mind_frame(field))
    await commands.settle()
    reply = await next_reply(connection)
    ((method, request, _),) = mind.calls
    assert method == FORWARDED[field].method
    assert request.on_behalf_of == WHO  # type: ignore[attr-defined]
    if "detail_mode" in request.DESCRIPTOR.fields_by_name:
        assert request.detail_mode == SUMMARY  # type: ignore[attr-defined]
    assert reply.request_id == "r1"
    assert reply.WhichOneof("result") == "mind"
    assert reply.mind.WhichOneof("call") == field
    assert getattr(reply.mind, field) == response_of(method)


@pytest.mark.parametrize("field", sorted(FORWARDED))
@pytest.mark.parametrize("code", ["NOT_FOUND", "FAILED_PRECONDITION", "UNAVAILABLE"])
async def test_a_mind_refusal_of_a_forwarded_call_is_its_status_and_message(
    field: str, code: str
) -> None:
    mind = StandInMind(failure=MindCallError(code, f"refused {field}"))
    commands, connection = router(mind)
    await commands.handle(mind_frame(field))
    await commands.settle()
    reply = await next_reply(connection)
    assert reply.WhichOneof("result") == "error"
    assert reply.error.code == grpc.StatusCode[code].value[0]
    assert reply.error.message == f"refused {field}"


@pytest.mark.parametrize("field", sorted(FORWARDED))
async def test_a_mind_frame_needs_the_scope_of_its_call(field: str) -> None:
    method = FORWARDED[field].method
    needed = mind_call_scope(method)
    others = tuple(scope for scope in ("chat", "approve", "post", "admin") if scope != needed)
    mind = StandInMind()
    commands, connection = router(mind, Identity("bob", others, "cred-b"))
    await commands.handle(mind_frame(field))
    reply = await next_reply(connection)
    assert mind.calls == []
    assert (reply.error.code, reply.error.message) == (
        grpc.StatusCode.PERMISSION_DENIED.value[0],
        f"this credential lacks scope '{needed}' (needed for {method})",
    )


async def test_a_mind_frame_the_credential_lacks_the_scope_for_is_refused_before_the_mind() -> None:
    mind = StandInMind()
    commands, connection = router(mind, Identity("bob", ("chat",), "cred-b"))
    await commands.handle(mind_frame("decide_approval"))
    reply = await next_reply(connection)
    assert mind.calls == []
    assert reply.error.code == grpc.StatusCode.PERMISSION_DENIED.value[0]
    assert (
        reply.error.message == "this credential lacks scope 'approve' (needed for DecideApproval)"
    )


async def test_a_mind_frame_without_a_call_is_an_invalid_argument() -> None:
    mind = StandInMind()
    commands, connection = router(mind)
    await commands.handle(face_pb2.ConnectRequest(request_id="r1", mind=face_pb2.MindCall()))
    reply = await next_reply(connection)
    assert mind.calls == []
    assert reply.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]


async def test_a_snapshot_through_a_mind_frame_is_rendered_for_a_summary_connection() -> None:
    tool = common_pb2.ToolProjection(
        tool_call_id="call-1",
        admitted_mode=TRANSPARENT,
        shown_mode=TRANSPARENT,
        arguments_json='{"path": "secret.txt"}',
        result_text="the secret",
    )

    class TranscriptMind(StandInMind):
        async def call(self, method: str, request: Message, *, timeout: float | None = None) -> Any:
            await super().call(method, request, timeout=timeout)
            return mind_pb2.GetSnapshotResponse(tools=[tool], last_event_id=9)

    commands, connection = router(TranscriptMind(), mode=SUMMARY)
    await commands.handle(mind_frame("get_snapshot"))
    snapshot = (await next_reply(connection)).mind.get_snapshot
    (shown,) = snapshot.tools
    assert shown.shown_mode == SUMMARY
    assert not shown.arguments_json and not shown.result_text
    assert snapshot.last_event_id == 9


def _carries(descriptor: Descriptor, wanted: set[Descriptor], seen: set[Descriptor]) -> bool:
    if descriptor in wanted:
        return True
    seen.add(descriptor)
    return any(
        field.message_type is not None
        and field.message_type not in seen
        and _carries(field.message_type, wanted, seen)
        for field in descriptor.fields
    )


def test_the_responses_carrying_transcripts_are_the_ones_rendered_for_the_detail_mode() -> None:
    """A new response that carries messages or tool projections must be rendered by
    `face.projection.project_response` before a client sees it; it fails here until it is."""
    transcript = {common_pb2.Message.DESCRIPTOR, common_pb2.ToolProjection.DESCRIPTOR}
    carrying = {
        method.output_type.name
        for method in CLIENT_CALLS
        if _carries(method.output_type, transcript, set())
    }
    assert carrying == {"GetSnapshotResponse", "GetHistoryResponse"}


async def test_a_slow_mind_frame_gets_its_long_timeout_and_does_not_hold_later_commands() -> None:
    mind = StandInMind(held="CompactConversation")
    commands, connection = router(mind)
    await commands.handle(mind_frame("compact_conversation", "c"))
    await commands.handle(mind_frame("cancel_run", "x"))
    assert (await next_reply(connection)).request_id == "x"
    mind.release.set()
    await commands.settle()
    compacted = await next_reply(connection)
    assert compacted.request_id == "c"
    assert compacted.mind.WhichOneof("call") == "compact_conversation"
    timeouts = {method: timeout for method, _, timeout in mind.calls}
    assert timeouts == {"CompactConversation": 600.0, "CancelRun": None}
