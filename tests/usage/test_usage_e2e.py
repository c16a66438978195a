"""`tobe usage` against a real Mind after a known sequence of runs, running and stopped.

The Mind talks to a local server speaking the OpenAI Chat Completions wire, whose every answer
reports known usage; `tobe usage` must print exactly those totals, and the cost at gpt-4o's
list price ($2.50 input, $1.25 cached input, $10 output per million tokens), whichever way
it groups them, from the running Mind and from the store once it stopped.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "providers"))

from helpers import store_backend
from helpers.mind_events import events_until
from helpers.mind_process import MindProcess, running_mind
from provider_kit import API_KEY
from provider_wire import Reply, WireServer

from tobe.cli import main
from tobe.v1 import common_pb2, events_pb2, mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

TERMINAL = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}
# (conversation, text, (prompt, completion, cached, reasoning) the server reports)
RUNS = [
    ("p_alice-a", "first", (1000, 100, 200, 40)),
    ("p_alice-b", "second", (2000, 300, 0, 0)),
    ("p_alice-a", "third", (1500, 50, 1000, 0)),
]


def cost(prompt: int, completion: int, cached: int) -> float:
    return ((prompt - cached) * 2.50 + cached * 1.25 + completion * 10.00) / 1e6


A = [cost(*r[2][:3]) for r in RUNS if r[0] == "p_alice-a"]
B = cost(*RUNS[1][2][:3])
TOTAL = {
    "group": "",
    "requests": 3,
    "input_tokens": 4500,
    "output_tokens": 450,
    "cached_tokens": 1200,
    "reasoning_tokens": 40,
    "unpriced_requests": 0,
}


def answer(text: str, prompt: int, completion: int, cached: int, reasoning: int) -> bytes:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o"}
    events = [
        {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {
            **chunk,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens_details": {"reasoning_tokens": reasoning},
            },
        },
    ]
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()


def usage(mind: MindProcess, *args: str, ok: bool = True) -> Result:
    env = {
        "TOBE_DATA_DIR": str(mind.data_dir),
        "TOBE_CONFIG": str(mind.data_dir / "absent.toml"),
        **store_backend.environment(mind.data_dir),
    }
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        result = CliRunner().invoke(main, ["usage", *args], env=env)
    finally:
        root.handlers[:], root.level = handlers, level
    assert (result.exit_code == 0) == ok, (result.output, result.exception)
    return result


def report(mind: MindProcess, *args: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(usage(mind, "--json", *args).stdout)
    return document


def chat(mind: MindProcess, runs: list[tuple[str, str]]) -> None:
    """Create the conversations, then send each text and wait for its run to complete."""
    channel = grpc.insecure_channel(mind.address)
    stub = mind_pb2_grpc.MindStub(channel)
    md = mind.gateway_metadata
    who = mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"])
    try:
        for key in sorted({key for key, _ in runs}):
            stub.CreateConversation(
                mind_pb2.CreateConversationRequest(on_behalf_of=who, key=key),
                metadata=md,
                timeout=10,
            )
        for number, (key, text) in enumerate(runs):
            sent = stub.SendChat(
                mind_pb2.SendChatRequest(
                    on_behalf_of=who,
                    conversation_key=key,
                    text=text,
                    idempotency_key=f"usage-{number}",
                ),
                metadata=md,
                timeout=15,
            )

            def ended(events: list[events_pb2.Event], run_id: str = sent.run_id) -> bool:
                run = events[-1].run_changed
                return (
                    events[-1].HasField("run_changed")
                    and run.id == run_id
                    and (run.state in TERMINAL)
                )

            events = events_until(stub, md, ended, timeout=60, what=f"run {sent.run_id}")
            assert events[-1].run_changed.state == common_pb2.RUN_STATE_COMPLETED
    finally:
        channel.close()


def check_conversation_usage(mind: MindProcess) -> None:
    """The people of a conversation see its usage; nobody else does."""
    channel = grpc.insecure_channel(mind.address)
    stub = mind_pb2_grpc.MindStub(channel)
    md = mind.gateway_metadata
    try:
        seen = stub.GetConversationUsage(
            mind_pb2.GetConversationUsageRequest(
                on_behalf_of=mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"]),
                conversation_key="p_alice-b",
            ),
            metadata=md,
            timeout=10,
        )
        assert (seen.total.requests, seen.total.input_tokens, seen.currency) == (1, 2000, "USD")
        assert [g.group for g in seen.by_purpose] == ["turn"]
        assert seen.total.cost == pytest.approx(B)
        with pytest.raises(grpc.RpcError) as refused:
            stub.GetConversationUsage(
                mind_pb2.GetConversationUsageRequest(
                    on_behalf_of=mind_pb2.OnBehalfOf(principal="bob", scopes=["chat"]),
                    conversation_key="p_alice-b",
                ),
                metadata=md,
                timeout=10,
            )
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        channel.close()


def check_reports(mind: MindProcess) -> None:
    by_purpose = report(mind)
    assert by_purpose["currency"] == "USD"
    assert [g["group"] for g in by_purpose["groups"]] == ["turn"]
    total = by_purpose["total"]
    assert {k: v for k, v in total.items() if k != "cost"} == TOTAL
    assert total["cost"] == pytest.approx(sum(A) + B)

    by_conversation = report(mind, "--by", "conversation")
    assert [(g["group"], g["requests"], g["input_tokens"]) for g in by_conversation["groups"]] == [
        ("p_alice-a", 2, 2500),
        ("p_alice-b", 1, 2000),
    ]
    assert by_conversation["groups"][0]["cost"] == pytest.approx(sum(A))
    assert by_conversation["groups"][0]["reasoning_tokens"] == 40

    by_model = report(mind, "--by", "model")
    assert [(g["group"], g["requests"]) for g in by_model["groups"]] == [("openai/gpt-4o", 3)]

    today = datetime.now(UTC).date()
    by_day = report(mind, "--by", "day", "--since", today.isoformat())
    assert [(g["group"], g["requests"]) for g in by_day["groups"]] == [(today.isoformat(), 3)]
    tomorrow = (today + timedelta(days=1)).isoformat()
    assert report(mind, "--since", tomorrow)["total"]["requests"] == 0

    table = usage(mind, "--by", "conversation").stdout
    assert "p_alice-a" in table and "2,500" in table
    assert f"{sum(A) + B:.4f} USD" in table


def test_tobe_usage_reports_the_recorded_runs_exactly_with_the_mind_running_and_stopped(
    tmp_path: Path, wire: WireServer
) -> None:
    wire.play(*(Reply(body=answer(text, *tokens)) for _, text, tokens in RUNS))
    with running_mind(
        tmp_path,
        script=None,
        clients=(),
        TOBE_PROVIDER__KIND="openai",
        TOBE_PROVIDER__BASE_URL=wire.url,
        TOBE_PROVIDER__MODEL="gpt-4o",
        TOBE_PROVIDER__API_KEY=API_KEY,
    ) as mind:
        chat(mind, [(key, text) for key, text, _ in RUNS])
        check_conversation_usage(mind)
        check_reports(mind)
        assert mind.terminate() == 0
        check_reports(mind)


def test_the_decision_layers_stages_are_recorded_under_their_own_purpose(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text('runs:\n  - match: ".*"\n    steps:\n      - {text: "hello"}\n')
    with running_mind(tmp_path, script=script, clients=(), TOBE_ACTIONS__ENABLED="true") as mind:
        chat(mind, [("p_alice-chat", "how are you?")])
        groups = report(mind)["groups"]

    # An ordinary message costs one extractor call before the run's one model step.
    assert [(g["group"], g["requests"]) for g in groups] == [("extract", 1), ("turn", 1)]
    # The scripted model has no price: tokens only.
    assert all(g["unpriced_requests"] == g["requests"] for g in groups)


def test_bad_input_ends_tobe_usage_with_one_line(tmp_path: Path) -> None:
    mind = MindProcess(tmp_path, {}, "", {})
    for args, says in [
        (("--since", "last tuesday"), "--since 'last tuesday' is neither a date"),
        (("--since", "2026-13-01"), "--since '2026-13-01' is neither a date"),
        (("--by", "week"), "--by 'week': choose one of purpose, day, conversation, model"),
    ]:
        result = usage(mind, *args, ok=False)
        (line,) = result.output.strip().splitlines()
        assert line.startswith(f"Error: {says}")
