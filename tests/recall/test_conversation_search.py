"""Searching conversations (`SearchConversations`) through the recall index: a sealed turn's
text is never found or shown, the best entry gives the snippet, titles match word by word,
and results are bounded, newest conversation first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mind.conversation.access import Viewer
from mind.recall.conversations import MAX_MATCHES, Match, matching
from mind.recall.indexer import RecallIndexer
from mind.recall.query import parse
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx

ALICE = Viewer("alice")
START = datetime(2026, 12, 8, tzinfo=UTC)


def _conversation(tx: WriteTx, key: str, at: datetime, title: str = "") -> None:
    tx.insert(models.Conversation(key=key, owner="alice", title=title, created_at=at))


def _run(tx: WriteTx, key: str, run_id: str, sealed: dict[str, str] | None) -> None:
    tx.insert(
        models.Run(
            id=run_id, conversation_key=key, state="completed", sealed=sealed, started_at=START
        )
    )


def _message(tx: WriteTx, key: str, role: str, text: str, run_id: str | None = None) -> int:
    row = tx.insert(
        models.Message(conversation_key=key, run_id=run_id, role=role, text=text, created_at=START)
    )
    return row.id


async def _search(database: Database, query: str, limit: int = MAX_MATCHES) -> list[Match]:
    await RecallIndexer(database).catch_up()
    return await database.read(lambda s: matching(s, ALICE, parse(query), limit))


async def test_a_sealed_turns_text_is_never_found(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_sealed", START)
        _run(tx, "p_sealed", "run-sealed", {"sleep_log": "health.sleep"})
        _message(tx, "p_sealed", "user", "how did I sleep", "run-sealed")
        _message(tx, "p_sealed", "assistant", "You slept 4 hours: insomnia again", "run-sealed")

    await database.write(unit)
    assert await _search(database, "insomnia") == []
    assert await _search(database, '"how did i sleep"') == []


async def test_the_best_entry_of_an_ordinary_turn_gives_the_snippet(database: Database) -> None:
    def unit(tx: WriteTx) -> int:
        _conversation(tx, "p_walk", START, "Weekend")
        _run(tx, "p_walk", "run-1", None)
        _message(tx, "p_walk", "user", "plan a walk", "run-1")
        return _message(tx, "p_walk", "assistant", "Try the Heron Trail by the lake.", "run-1")

    first = await database.write(unit)
    [match] = await _search(database, "heron TRAIL")
    assert match.conversation.key == "p_walk" and not match.in_title
    assert match.message_id == first and match.snippet == "Try the Heron Trail by the lake."


async def test_results_are_bounded_newest_conversation_first(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        for n in range(MAX_MATCHES + 5):
            _conversation(tx, f"p_n{n:03}", START + timedelta(minutes=n), f"note {n}")

    await database.write(unit)
    found = await _search(database, "note")
    assert len(found) == MAX_MATCHES
    assert found[0].conversation.key == f"p_n{MAX_MATCHES + 4:03}" and found[0].in_title
