"""A real Mind whose model server accepts the request and sends nothing: the turn ends with an
error naming the provider and `provider.first_byte_timeout` (and the conversation's error
reply), not silence, and the conversation keeps working."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from helpers.mind_events import events_until
from helpers.mind_process import MindProcess, running_mind
from provider_kit import API_KEY, MODELS
from provider_wire import Reply, WireServer, data_file

from tobe.v1 import common_pb2, events_pb2, mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

TERMINAL = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}
WHO = mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"])
ERROR_REPLY = "The model did not answer; try again."


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()


def _turn(stub: mind_pb2_grpc.MindStub, mind: MindProcess, key: str, text: str) -> mind_pb2.Run:
    """Send `text`; the run as it ended."""
    sent = stub.SendChat(
        mind_pb2.SendChatRequest(
            on_behalf_of=WHO, conversation_key=key, text=text, idempotency_key=text
        ),
        metadata=mind.gateway_metadata,
        timeout=15,
    )

    def ended(events: list[events_pb2.Event]) -> bool:
        run = events[-1].run_changed
        return (
            events[-1].HasField("run_changed") and run.id == sent.run_id and run.state in TERMINAL
        )

    events = events_until(stub, mind.gateway_metadata, ended, timeout=60, what="the run to end")
    return events[-1].run_changed


def test_a_silent_model_server_ends_the_turn_with_an_error_naming_it_and_the_next_turn_works(
    tmp_path, wire: WireServer
) -> None:
    wire.play(Reply(silent=True), Reply(body=data_file("openai/e2e_answer.sse")))
    with running_mind(
        tmp_path,
        script=None,
        clients=(),
        TOBE_PROVIDER__KIND="openai",
        TOBE_PROVIDER__BASE_URL=wire.url,
        TOBE_PROVIDER__MODEL=MODELS["openai"],
        TOBE_PROVIDER__API_KEY=API_KEY,
        # Far beyond the silence limit: a turn that ends names the limit, not the read timeout.
        TOBE_PROVIDER__TIMEOUT="600",
        TOBE_PROVIDER__FIRST_BYTE_TIMEOUT="1",
        TOBE_MIND__ERROR_REPLY=ERROR_REPLY,
    ) as mind:
        channel = grpc.insecure_channel(mind.address)
        stub = mind_pb2_grpc.MindStub(channel)
        try:
            key = stub.CreateConversation(
                mind_pb2.CreateConversationRequest(on_behalf_of=WHO, key="p_silent"),
                metadata=mind.gateway_metadata,
                timeout=10,
            ).conversation.key
            failed = _turn(stub, mind, key, "hello?")
            assert failed.state == common_pb2.RUN_STATE_FAILED, failed
            assert "openai sent nothing for 1 s (provider.first_byte_timeout)" in failed.reason
            assert wire.disconnected.wait(10), "the silent request was left open"

            answered = _turn(stub, mind, key, "hello again")
            assert answered.state == common_pb2.RUN_STATE_COMPLETED, answered
            history = stub.GetHistory(
                mind_pb2.GetHistoryRequest(on_behalf_of=WHO, conversation_key=key, limit=100),
                metadata=mind.gateway_metadata,
                timeout=10,
            )
        finally:
            channel.close()
    texts = [message.text for message in history.messages]
    assert texts[:2] == ["hello?", ERROR_REPLY]
    assert texts[-1] == "Done: here is the time."
    assert len(wire.requests) == 2
