"""A tool-calling turn through a real Mind process against each local wire server.

The Mind runs as `tobe mind serve` configured with the provider kind and a base URL pointing
at the wire server; one chat turn is driven over gRPC. The model asks for the built-in
`current_time` tool, the Mind runs it, and the follow-up request the server receives must
carry the tool result in the exact form that API requires, under the id the model gave the
call (the Mind's own id where a Gemini model gave none).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import grpc
import pytest
from helpers.mind_events import events_until
from helpers.mind_process import MindProcess, mind_env, run_mind_command, running_mind
from provider_kit import API_KEY, MODELS
from provider_wire import Reply, WireServer, cassette_bodies, data_file

from tobe.v1 import common_pb2, events_pb2, mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

TERMINAL = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}
GEMINI_ANSWER = cassette_bodies("gemini/tool_call_thought_signature.yaml")[1]
# Per case: the wire, the recorded tool call and answer, the id the model gave the call.
TURNS = {
    "openai": (
        "openai",
        "openai/e2e_tool_call.sse",
        data_file("openai/e2e_answer.sse"),
        "call_e2eOpenAI",
    ),
    "anthropic": (
        "anthropic",
        "anthropic/e2e_thinking_tool_use.txt",
        data_file("anthropic/basic_response.txt"),
        "toolu_01E2E",
    ),
    "gemini-without-call-id": ("gemini", "gemini/e2e_function_call.sse", GEMINI_ANSWER, ""),
    "gemini-with-call-id": (
        "gemini",
        "gemini/e2e_function_call_with_id.sse",
        GEMINI_ANSWER,
        "fc-e2e-7k2m9q",
    ),
}
ANSWERS = {
    "openai": "Done: here is the time.",
    "anthropic": "Hello there!",
    "gemini": "The capital of Mexico is Mexico City.",
}
# The id the Mind gives a call.
MIND_CALL_ID = re.compile(r"call_[0-9a-f]{32}")


def _unstamped(text: str) -> str:
    """Message text without the provider view's time stamp."""
    return re.sub(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d GMT\] ", "", text)


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()


def _run_one_turn(mind: MindProcess, text: str) -> tuple[int, list[str]]:
    """(the run's final state, the texts of the conversation's messages)."""
    channel = grpc.insecure_channel(mind.address)
    stub = mind_pb2_grpc.MindStub(channel)
    md = mind.gateway_metadata
    who = mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"])
    try:
        key = stub.CreateConversation(
            mind_pb2.CreateConversationRequest(on_behalf_of=who, key="p_wire-e2e"),
            metadata=md,
            timeout=10,
        ).conversation.key
        sent = stub.SendChat(
            mind_pb2.SendChatRequest(
                on_behalf_of=who,
                conversation_key=key,
                text=text,
                idempotency_key="e2e-1",
                detail_mode=common_pb2.DETAIL_MODE_TRANSPARENT,
            ),
            metadata=md,
            timeout=15,
        )

        def ended(events: list[events_pb2.Event]) -> bool:
            event = events[-1]
            run = event.run_changed
            return event.HasField("run_changed") and run.id == sent.run_id and run.state in TERMINAL

        events = events_until(stub, md, ended, timeout=90, what=f"run {sent.run_id} to end")
        history = stub.GetHistory(
            mind_pb2.GetHistoryRequest(
                on_behalf_of=who,
                conversation_key=key,
                limit=100,
                detail_mode=common_pb2.DETAIL_MODE_TRANSPARENT,
            ),
            metadata=md,
            timeout=10,
        )
        return events[-1].run_changed.state, [m.text for m in history.messages]
    finally:
        channel.close()


@pytest.mark.parametrize("case", sorted(TURNS))
def test_tool_turn_through_the_mind_sends_the_exact_tool_result_format(tmp_path, wire, case):
    kind, recorded, second, model_id = TURNS[case]
    wire.play(Reply(body=data_file(recorded)), Reply(body=second))
    with running_mind(
        tmp_path,
        script=None,
        clients=(),
        TOBE_PROVIDER__KIND=kind,
        TOBE_PROVIDER__BASE_URL=wire.url,
        TOBE_PROVIDER__MODEL=MODELS[kind],
        TOBE_PROVIDER__API_KEY=API_KEY,
    ) as mind:
        state, texts = _run_one_turn(mind, "what time is it?")
        output = "\n".join(mind.output)

    assert state == common_pb2.RUN_STATE_COMPLETED, output[-3000:]
    assert API_KEY not in output
    assert texts[0] == "what time is it?"
    assert texts[-1] == ANSWERS[kind]
    assert len(wire.requests) == 2
    follow_up = wire.requests[1]
    call_id = CHECKS[kind](wire.requests[0].json(), follow_up.json(), follow_up.headers, recorded)
    if model_id:
        assert call_id == model_id
    else:
        assert MIND_CALL_ID.fullmatch(call_id)


def _check_openai(first: dict, body: dict, headers: dict, recorded: str) -> str:
    """Checks the follow-up request; returns the call id it carries."""
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert any(t["function"]["name"] == "current_time" for t in first["tools"])
    at = next(i for i, m in enumerate(body["messages"]) if m["role"] == "assistant")
    assistant, tool = body["messages"][at : at + 2]
    (call,) = assistant["tool_calls"]
    assert call["type"] == "function"
    assert call["function"] == {"name": "current_time", "arguments": '{"timezone":"UTC"}'}
    assert set(tool) == {"role", "tool_call_id", "content"}
    assert tool["role"] == "tool" and tool["tool_call_id"] == call["id"]
    assert json.loads(_unstamped(tool["content"]))["timezone"] == "UTC"
    return call["id"]


def _check_anthropic(first: dict, body: dict, headers: dict, recorded: str) -> str:
    assert headers["x-api-key"] == API_KEY and headers["anthropic-version"] == "2023-06-01"
    signature = next(
        json.loads(line[6:])["delta"]["signature"]
        for line in data_file(recorded).decode().splitlines()
        if "signature_delta" in line
    )
    at = next(i for i, m in enumerate(body["messages"]) if m["role"] == "assistant")
    assistant, result = body["messages"][at : at + 2]
    thinking, text, tool_use = assistant["content"]
    assert thinking == {
        "type": "thinking",
        "thinking": "The user wants the time; I should call current_time.",
        "signature": signature,
    }
    assert text["type"] == "text" and _unstamped(text["text"]) == "Let me check."
    assert tool_use["type"] == "tool_use" and tool_use["name"] == "current_time"
    assert tool_use["input"] == {"timezone": "UTC"}
    assert result["role"] == "user"
    (block,) = result["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == tool_use["id"]
    assert json.loads(_unstamped(block["content"]))["timezone"] == "UTC"
    return tool_use["id"]


def _check_gemini(first: dict, body: dict, headers: dict, recorded: str) -> str:
    assert headers["x-goog-api-key"] == API_KEY
    first_chunk = data_file(recorded).decode().split("\r\n\r\n")[0]
    signature = json.loads(first_chunk[6:])["candidates"][0]["content"]["parts"][0][
        "thoughtSignature"
    ]
    roles = [content["role"] for content in body["contents"]]
    model_at = roles.index("model")
    model, response = body["contents"][model_at], body["contents"][model_at + 1]
    stamp, part = model["parts"]
    assert _unstamped(stamp["text"]) == ""
    assert part["thoughtSignature"] == signature
    assert part["functionCall"]["name"] == "current_time"
    assert part["functionCall"]["args"] == {"timezone": "UTC"}
    (reply,) = response["parts"]
    assert response["role"] == "user"
    assert reply["functionResponse"]["name"] == "current_time"
    assert reply["functionResponse"]["id"] == part["functionCall"]["id"]
    output = reply["functionResponse"]["response"]["output"]
    assert json.loads(_unstamped(output))["timezone"] == "UTC"
    return part["functionCall"]["id"]


CHECKS = {"openai": _check_openai, "anthropic": _check_anthropic, "gemini": _check_gemini}


def test_an_unknown_model_stops_the_mind_from_starting_with_the_fix(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    env = mind_env(
        data_dir,
        None,
        TOBE_PROVIDER__KIND="openai",
        TOBE_PROVIDER__MODEL="my-local-llama",
        TOBE_PROVIDER__API_KEY=API_KEY,
    )

    finished = run_mind_command(env)

    assert finished.returncode != 0
    message = finished.stdout + finished.stderr
    assert "unknown model 'my-local-llama'" in message
    assert "[[provider.models]]" in message and "TOBE_PROVIDER__MODEL" in message
    assert API_KEY not in message
    assert not (data_dir / "tobe.db").exists()
