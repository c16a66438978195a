"""Searching conversations in the store: a sealed turn's text is never found or shown, tool
results are not searched, the first match gives the snippet, and results are bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mind.conversation.access import Viewer
from mind.conversation.search import MAX_MATCHES, like_pattern, search, snippet
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


async def test_a_sealed_turns_text_and_tool_results_are_never_found(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_sealed", START)
        _run(tx, "p_sealed", "run-sealed", {"sleep_log": "health.sleep"})
        _message(tx, "p_sealed", "user", "how did I sleep", "run-sealed")
        _message(tx, "p_sealed", "assistant", "You slept 4 hours: insomnia again", "run-sealed")
        _conversation(tx, "p_plain", START + timedelta(seconds=1))
        _run(tx, "p_plain", "run-plain", None)
        _message(tx, "p_plain", "tool", "insomnia in a tool result", "run-plain")

    await database.write(unit)
    assert await database.read(lambda s: search(s, ALICE, "insomnia", 50)) == []
    assert await database.read(lambda s: search(s, ALICE, "how did i sleep", 50)) == []


async def test_the_first_match_of_an_ordinary_turn_gives_the_snippet(database: Database) -> None:
    def unit(tx: WriteTx) -> int:
        _conversation(tx, "p_walk", START, "Weekend")
        _run(tx, "p_walk", "run-1", None)
        _message(tx, "p_walk", "user", "plan a walk", "run-1")
        first = _message(tx, "p_walk", "assistant", "Try the Heron Trail by the lake.", "run-1")
        _message(tx, "p_walk", "assistant", "The heron trail again?", "run-1")
        return first

    first = await database.write(unit)
    [match] = await database.read(lambda s: search(s, ALICE, "heron TRAIL", 50))
    assert match.conversation.key == "p_walk" and not match.in_title
    assert match.message_id == first and match.snippet == "Try the Heron Trail by the lake."


async def test_results_are_bounded_newest_conversation_first(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        for n in range(MAX_MATCHES + 5):
            _conversation(tx, f"p_n{n:03}", START + timedelta(minutes=n), f"note {n}")

    await database.write(unit)
    found = await database.read(lambda s: search(s, ALICE, "note", MAX_MATCHES))
    assert len(found) == MAX_MATCHES
    assert found[0].conversation.key == f"p_n{MAX_MATCHES + 4:03}" and found[0].in_title


@pytest.mark.parametrize(
    ("query", "pattern"),
    [("50%", "%50\\%%"), ("a_b", "%a\\_b%"), ("back\\slash", "%back\\\\slash%"), ("AbC", "%abc%")],
)
def test_wildcards_in_a_query_are_taken_literally(query: str, pattern: str) -> None:
    assert like_pattern(query) == pattern


def test_a_snippet_is_cut_around_the_match_on_one_line() -> None:
    text = "start " + "a" * 200 + " needle\nhere " + "b" * 200
    cut = snippet(text, "NEEDLE", length=40)
    assert cut.startswith("…") and cut.endswith("…") and "needle here" in cut
    assert len(cut) == 42
