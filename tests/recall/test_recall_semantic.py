"""Semantic recall on each store, against a local embeddings server on each wire: a detail is
found by meaning with no word in common with the query, merged with the keyword rank; never
another person's or a sealed turn's; embedding waits for a server that is down without
holding up the keyword index, and a changed model re-embeds."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from helpers.fake_embeddings import FakeEmbeddings
from pydantic import ValidationError
from sqlalchemy import func, select

from mind.conversation import runs
from mind.conversation.access import Viewer
from mind.conversation.messages import append_message
from mind.providers.embeddings import Embedder, EmbeddingKind
from mind.recall.indexer import RecallIndexer
from mind.recall.query import parse
from mind.recall.search import search
from mind.recall.semantic import Semantic, configured, fused
from mind.recall.tool import RecallTool
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode, ToolContext
from tobe.config import RecallSettings
from tobe.runtime.backoff import Backoff

ALICE = Viewer("alice")
START = datetime(2026, 3, 14, tzinfo=UTC)
DETAIL = "turn 12: we had dinner at Trattoria Nonna Rosa by the old harbour"
# No word of the query is in the detail: only its meaning is.
BY_MEANING = "which restaurant did I mention"


@pytest.fixture
def fake() -> Iterator[FakeEmbeddings]:
    with FakeEmbeddings() as server:
        yield server


def _semantic(database: Database, fake: FakeEmbeddings, model: str = "concepts") -> Semantic:
    embedder = Embedder("openai", model, base_url=f"{fake.url}/v1", api_key="sk-test-secret")
    # No wait between attempts: the test says when the server is back.
    return Semantic(database, embedder, batch=4, backoff=Backoff(initial=0.0, jitter=0.0))


def _said(tx: WriteTx, key: str, text: str, *, owner: str = "alice", sealed: bool = False) -> None:
    if tx.session.get(models.Conversation, key) is None:
        tx.insert(models.Conversation(key=key, owner=owner, title="", created_at=START))
    run = runs.start(tx, key=key, trigger="user", mode="transparent", audience=[])
    if sealed:
        tx.session.execute(
            models.Run.__table__.update()
            .where(models.Run.id == run.id)
            .values(sealed={"sleep_log": "health.sleep"})
        )
    append_message(
        tx, [], key=key, run_id=run.id, role="user", text=text, payload={},
        mode=DetailMode.TRANSPARENT,
    )  # fmt: skip
    runs.finish(tx, run.id, state=runs.RunState.COMPLETED, reason="", audience=[])


def _chat(tx: WriteTx) -> None:
    for turn in range(1, 21):
        _said(tx, "p_alice", DETAIL if turn == 12 else f"turn {turn}: everyday chatter")
    _said(tx, "p_alice", "the heron stood by the lake")
    _said(tx, "p_alice", "an egret flew over")
    _said(tx, "p_alice", "my lunch diary: pasta again", sealed=True)
    _said(tx, "p_bob", "bob's dinner at the pizza place", owner="bob")


async def _found(database: Database, semantic: Semantic, query: str) -> list[str]:
    probe = await semantic.probe(query)
    hits = await database.read(lambda s: search(s, ALICE, parse(query), 5, probe=probe))
    return [hit.text for hit in hits]


async def test_a_detail_is_found_by_meaning_alone_and_never_anothers_or_a_sealed_turns(
    database: Database, fake: FakeEmbeddings
) -> None:
    await database.write(_chat)
    semantic = _semantic(database, fake)
    await RecallIndexer(database, embed=semantic.step).catch_up()

    assert await _found(database, semantic, BY_MEANING) == [DETAIL]
    # Without the vectors it is a keyword search, which finds nothing.
    assert database.read_now(lambda s: search(s, ALICE, parse(BY_MEANING), 5)) == []
    # Keywords and meaning merged: the text with the word first, then the one alike.
    assert await _found(database, semantic, "heron") == [
        "the heron stood by the lake",
        "an egret flew over",
    ]
    # Nothing sealed was ever sent to be embedded.
    assert not any("diary" in text for text in fake.texts())


async def test_the_recall_tool_finds_by_meaning(
    database: Database, fake: FakeEmbeddings, tool_context: Callable[[str], ToolContext]
) -> None:
    await database.write(_chat)
    semantic = _semantic(database, fake)
    await RecallIndexer(database, embed=semantic.step).catch_up()
    outcome = await RecallTool(database, semantic).run(
        {"query": BY_MEANING}, tool_context("p_alice")
    )
    [result] = json.loads(outcome.output)["results"]
    assert result["snippet"] == DETAIL and result["conversation"] == "p_alice"


async def test_a_server_that_is_down_holds_up_nothing_and_is_asked_again_later(
    database: Database, fake: FakeEmbeddings
) -> None:
    await database.write(_chat)
    semantic = _semantic(database, fake)
    indexer = RecallIndexer(database, embed=semantic.step)
    fake.down = True
    await indexer.catch_up()
    # The keyword index is complete; no vector was stored; a query is a keyword search.
    assert database.read_now(lambda s: search(s, ALICE, parse("trattoria"), 5))
    assert _embedded(database) == 0
    assert await _found(database, semantic, BY_MEANING) == []

    fake.down = False
    await indexer.catch_up()
    assert _embedded(database) == _entries(database)
    assert await _found(database, semantic, BY_MEANING) == [DETAIL]


async def test_a_changed_model_embeds_every_entry_again(
    database: Database, fake: FakeEmbeddings
) -> None:
    await database.write(_chat)
    await RecallIndexer(database, embed=_semantic(database, fake).step).catch_up()
    before = len(fake.texts())
    assert before == _entries(database)

    other = _semantic(database, fake, model="concepts-2")
    await RecallIndexer(database, embed=other.step).catch_up()
    assert len(fake.texts()) == 2 * before
    models_used = database.read_now(
        lambda s: set(s.scalars(select(models.RecallEntry.embedding_model).distinct()))
    )
    assert models_used == {"openai:concepts-2"}
    assert await _found(database, other, BY_MEANING) == [DETAIL]


@pytest.mark.parametrize("kind", ["openai", "ollama", "gemini"])
async def test_each_wire_gives_one_vector_per_text_in_order(
    fake: FakeEmbeddings, kind: EmbeddingKind
) -> None:
    base = f"{fake.url}/v1" if kind == "openai" else fake.url
    embedder = Embedder(kind, "concepts", base_url=base, api_key="secret-key")
    vectors = await embedder.embed(["a heron", "dinner by the lake"])
    assert vectors == [[0.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]]
    path, body = fake.requests[-1]
    expected_path = {
        "openai": "/v1/embeddings",
        "ollama": "/api/embed",
        "gemini": "/v1beta/models/concepts:batchEmbedContents",
    }[kind]
    assert path == expected_path
    if kind == "gemini":
        assert body["requests"][0]["model"] == "models/concepts"
    else:
        assert body == {"model": "concepts", "input": ["a heron", "dinner by the lake"]}


def test_reciprocal_rank_fusion_favours_what_both_rankings_hold_then_the_words() -> None:
    # 3 is second by words and first by meaning: 1/62 + 1/61 beats 1's 1/61 alone; 1 and 5
    # tie (both first once), and the keyword ranking decides.
    assert fused([1, 3, 2], [3, 4], limit=3) == [3, 1, 4]
    assert fused([1, 2], [5, 6], limit=4) == [1, 5, 2, 6]


def _embedded(database: Database) -> int:
    entry = models.RecallEntry
    return database.read_now(
        lambda s: s.scalar(select(func.count()).where(entry.embedding.is_not(None))) or 0
    )


def _entries(database: Database) -> int:
    return database.read_now(
        lambda s: s.scalar(select(func.count()).select_from(models.RecallEntry)) or 0
    )


def test_semantic_recall_is_off_by_default_and_needs_a_model_when_named(
    database: Database,
) -> None:
    assert configured(RecallSettings(), database) is None
    with pytest.raises(ValidationError, match="needs the model"):
        RecallSettings(embeddings="ollama")
    semantic = configured(RecallSettings(embeddings="ollama", model="nomic-embed-text"), database)
    assert semantic is not None and semantic.embedder.name == "ollama:nomic-embed-text"
