"""Mind.CompactConversation on a real server, in front of a manager that compacts on cue: the
gateway's principal reaches the manager, the compaction comes back as the contract's message,
and each refusal reaches the gateway with its status code."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from mind.api.mind_servicer import MindServicer
from mind.conversation.access import Viewer
from mind.conversation.errors import CompactionFailed
from mind.credentials import Identity
from mind.credentials.interceptor import AuthInterceptor
from mind.errors import NotFound, WrongState
from mind.events.views import CompactionTrigger, CompactionView
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.runtime.server import ServiceSpec, start_server
from tobe.v1 import events_pb2, mind_pb2, mind_pb2_grpc

COMPACTION = CompactionView(
    generation=1,
    through_message_id=12,
    messages_summarised=10,
    tokens_before=5_000,
    tokens_after=900,
    trigger=CompactionTrigger.REQUESTED,
    summary_calls=1,
    run_id="",
)
IDENTITIES = {
    "gateway-token": Identity("cred-g", "service", "face", ("gateway",)),
    "client-token": Identity("cred-c", "client", "alice", ("chat",)),
}
ALICE = mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"])


class CompactingRuns:
    """The runs API group: answers `compact` with the next outcome of its list: a compaction
    or an error."""

    def __init__(self) -> None:
        self.asked: list[tuple[Viewer, str]] = []
        self.outcomes: list[CompactionView | Exception] = []

    async def compact(self, viewer: Viewer, key: str) -> CompactionView:
        self.asked.append((viewer, key))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


async def _authenticate(token: str) -> Identity | None:
    return IDENTITIES.get(token)


@pytest.fixture
async def served() -> AsyncIterator[tuple[CompactingRuns, mind_pb2_grpc.MindStub]]:
    runs = CompactingRuns()
    unused: Any = None  # only the runs group takes part in a compaction
    servicer = MindServicer(
        SimpleNamespace(runs=runs),  # type: ignore[arg-type]
        unused,
        unused,
        _authenticate,
        approvals=unused,
        pairing=unused,
        revocation_reports=unused,
    )
    server = await start_server(
        [
            ServiceSpec(
                "tobe.v1.Mind", lambda s: mind_pb2_grpc.add_MindServicer_to_server(servicer, s)
            )
        ],
        ["127.0.0.1:0"],
        interceptors=[AuthInterceptor(_authenticate)],
    )
    channel = open_channel(f"127.0.0.1:{server.bound['127.0.0.1:0']}")
    try:
        yield runs, mind_pb2_grpc.MindStub(channel)
    finally:
        await channel.close()
        await server.stop(None)


async def _compact(
    stub: mind_pb2_grpc.MindStub, key: str, token: str = "gateway-token"
) -> mind_pb2.CompactConversationResponse:
    request = mind_pb2.CompactConversationRequest(on_behalf_of=ALICE, conversation_key=key)
    return await stub.CompactConversation(request, metadata=bearer_metadata(token), timeout=10)


async def _refusal(
    stub: mind_pb2_grpc.MindStub, key: str, token: str = "gateway-token"
) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _compact(stub, key, token)
    return caught.value.code(), caught.value.details() or ""


async def test_the_compaction_reaches_the_gateway_as_the_event_carries_it(served) -> None:
    manager, stub = served
    manager.outcomes.append(COMPACTION)
    response = await _compact(stub, "p_k")
    assert manager.asked == [(Viewer("alice", ("chat",)), "p_k")]
    assert response.compaction == events_pb2.ContextCompacted(
        generation=1,
        through_message_id=12,
        messages_summarised=10,
        tokens_before=5_000,
        tokens_after=900,
        trigger=events_pb2.COMPACTION_TRIGGER_REQUESTED,
        summary_calls=1,
    )


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (NotFound("no conversation 'p_k'"), grpc.StatusCode.NOT_FOUND),
        (WrongState("nothing old enough to summarise"), grpc.StatusCode.FAILED_PRECONDITION),
        (CompactionFailed("the summary call failed"), grpc.StatusCode.UNAVAILABLE),
    ],
    ids=lambda value: type(value).__name__,
)
async def test_a_refusal_reaches_the_gateway_with_its_code_and_message(
    served, error: Exception, code: grpc.StatusCode
) -> None:
    manager, stub = served
    manager.outcomes.append(error)
    assert await _refusal(stub, "p_k") == (code, str(error))


async def test_no_key_and_no_gateway_credential_are_refused_before_the_manager(served) -> None:
    manager, stub = served
    assert await _refusal(stub, "") == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "conversation_key is required: name the conversation to compact",
    )
    code, _ = await _refusal(stub, "p_k", "client-token")
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert manager.asked == []
