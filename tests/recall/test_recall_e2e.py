"""Recall through a real Mind on each store: a 300-turn conversation compacted several times,
and the model's `recall` tool finds a detail of turn 12, which no summary kept word for word,
by keyword and (semantic recall on a local embeddings server) by meaning, and never another
person's conversation."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.eventually import eventually
from helpers.fake_embeddings import FakeEmbeddings
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import common_pb2, events_pb2, mind_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.pg_e2e]
TURNS = 300
DETAIL = "turn 12: we had dinner at Trattoria Nonna Rosa by the old harbour"
FILLER = "Some everyday chatter to fill the context window a little. " * 4
# No word in common with the detail: found by its meaning alone.
BY_MEANING = "which restaurant did I mention"
RUNNING = common_pb2.RUN_STATE_RUNNING
SCRIPT = {
    # The summariser keeps only a line: turn 12's detail survives only in the stored messages.
    "summaries": [{"match": "turn", "text": "Earlier: the person chatted about their days."}],
    "runs": [
        {
            "match": "^remind me of that meal",
            "steps": [
                {"tool_calls": [{"name": "recall", "arguments": {"query": BY_MEANING}}]},
                {
                    "expect": {"last_role": "tool", "last_contains": "Trattoria Nonna Rosa"},
                    "text": "You mentioned a trattoria.",
                },
            ],
        },
        {
            "match": "^what was the restaurant",
            "steps": [
                {"tool_calls": [{"name": "recall", "arguments": {"query": "nonna rosa"}}]},
                {
                    "expect": {"last_role": "tool", "last_contains": "Trattoria Nonna Rosa"},
                    "text": "It was Trattoria Nonna Rosa.",
                },
            ],
        },
        {"match": "turn \\d+", "steps": [{"text": "Noted."}]},
        {"match": ".*", "steps": [{"text": "Noted."}]},
    ],
}


@pytest.fixture
def embeddings() -> Iterator[FakeEmbeddings]:
    with FakeEmbeddings() as server:
        yield server


@pytest.fixture
def mind(tmp_path: Path, embeddings: FakeEmbeddings) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")  # JSON is YAML
    model = {"id": "tiny", "context_window": 4000, "max_output": 256}
    env = {
        "TOBE_PROVIDER__MODEL": "tiny",
        "TOBE_PROVIDER__MODELS": json.dumps([model]),
        "TOBE_CONTEXT__RESERVE_TOKENS": "200",
        "TOBE_RECALL__EMBEDDINGS": "openai",
        "TOBE_RECALL__BASE_URL": f"{embeddings.url}/v1",
        "TOBE_RECALL__MODEL": "concepts",
    }
    with running_mind(tmp_path, script=script, **env) as process:
        yield process


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    client = Gateway.connect(mind)
    try:
        yield client
    finally:
        client.close()


class Chat:
    """Turns one after the other, each waiting for its run's end from where the last one's
    events ended (a replay from the start each time would grow with the conversation)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.after = gateway.head()
        self.events: list[events_pb2.Event] = []

    def __call__(self, key: str, text: str, principal: str = "alice") -> str:
        """Send `text` and wait for the run that answers it (it may have waited in the queue
        behind a compaction); that run's id."""
        self.gateway.send(key, text, uuid.uuid4().hex, principal=principal)
        events = self.gateway.wait_for(self.after, _a_run_started_and_ended)
        self.events += events
        self.after = max(event.durable_id for event in events)
        return _a_run_started_and_ended(events)


def _a_run_started_and_ended(events: list[events_pb2.Event]) -> str:
    started = {r.id for r in payloads(events, "run_changed") if r.state == RUNNING}
    ended = [r.id for r in payloads(events, "run_changed") if r.state != RUNNING]
    return next((run_id for run_id in ended if run_id in started), "")


def _search(gateway: Gateway, query: str, principal: str) -> list[mind_pb2.ConversationMatch]:
    request = mind_pb2.SearchConversationsRequest(on_behalf_of=gateway.who(principal), query=query)
    return list(gateway.stub.SearchConversations(request, metadata=gateway.md, timeout=10).matches)


def test_a_detail_of_turn_12_of_300_compacted_turns_is_recalled_and_never_anothers(
    gateway: Gateway,
) -> None:
    chat = Chat(gateway)
    bobs = gateway.create(f"p_{uuid.uuid4().hex[:12]}", principal="bob")
    chat(bobs, "bob's secret: Nonna Rosa owes me money", principal="bob")
    key = gateway.create(f"p_{uuid.uuid4().hex[:12]}")
    for turn in range(1, TURNS + 1):
        chat(key, DETAIL if turn == 12 else f"turn {turn}: {FILLER}")
    assert len(payloads(chat.events, "context_compacted")) >= 3

    # The person's search finds it too, once the indexer has caught up.
    found = eventually(
        lambda: _search(gateway, '"nonna rosa" harbour', "alice"),
        what="turn 12 found by the search",
    )
    assert [m.conversation.key for m in found] == [key]
    assert "Trattoria Nonna Rosa" in found[0].snippet
    # By meaning too, once the entries are embedded: no word of the query is in the detail.
    meant = eventually(
        lambda: _search(gateway, BY_MEANING, "alice"), what="turn 12 found by meaning"
    )
    assert [m.conversation.key for m in meant] == [key]
    assert "Trattoria Nonna Rosa" in meant[0].snippet

    run_id = chat(key, "what was the restaurant I told you about?")
    ended = [r for r in payloads(chat.events, "run_changed") if r.id == run_id][-1]
    assert ended.state == common_pb2.RUN_STATE_COMPLETED, ended.reason
    results = _last_results(gateway, key)
    assert results and {r["conversation"] for r in results} == {key}
    assert results[0]["snippet"].startswith("turn 12: we had dinner at Trattoria Nonna Rosa")
    assert results[0]["role"] == "user" and results[0]["message_id"] > 0

    # The model's recall by meaning: turn 12 is among what it finds (the answer just given,
    # "It was Trattoria Nonna Rosa.", is as alike as it now).
    run_id = chat(key, "remind me of that meal")
    ended = [r for r in payloads(chat.events, "run_changed") if r.id == run_id][-1]
    assert ended.state == common_pb2.RUN_STATE_COMPLETED, ended.reason
    results = _last_results(gateway, key)
    assert results and {r["conversation"] for r in results} == {key}
    assert any(r["role"] == "user" and r["snippet"] == DETAIL for r in results)


def _last_results(gateway: Gateway, key: str) -> list[dict[str, object]]:
    """The results of the conversation's last `recall` call."""
    return [
        json.loads(m.text)["results"]
        for m in gateway.history(key).messages
        if m.role == common_pb2.MESSAGE_ROLE_TOOL
    ][-1]
