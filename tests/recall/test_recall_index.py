"""The recall index on each store backend: the indexer follows the outbox; queries mean the
same on SQLite and PostgreSQL; only the viewer's conversations and never a sealed turn."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, func, select, text

from mind.conversation import runs
from mind.conversation.access import Viewer
from mind.conversation.messages import append_message
from mind.errors import InvalidInput
from mind.memory.store import delete_entry, write_entry
from mind.recall.indexer import BATCH, RecallIndexer
from mind.recall.query import parse
from mind.recall.search import Scope, search, snippet
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode

ALICE, BOB = Viewer("alice"), Viewer("bob")
START = datetime(2026, 3, 14, tzinfo=UTC)
EVERYWHERE = Scope()


def _conversation(tx: WriteTx, key: str, owner: str = "alice") -> None:
    tx.insert(models.Conversation(key=key, owner=owner, title="", created_at=START))


def _turn(
    tx: WriteTx, key: str, said: str, answered: str, *, sealed: bool = False, end: bool = True
) -> str:
    run = runs.start(tx, key=key, trigger="user", mode="transparent", audience=[])
    if sealed:
        tx.session.execute(
            models.Run.__table__.update()
            .where(models.Run.id == run.id)
            .values(sealed={"sleep_log": "health.sleep"})
        )
    for role, said_text in (("user", said), ("assistant", answered)):
        append_message(
            tx,
            [],
            key=key,
            run_id=run.id,
            role=role,
            text=said_text,
            payload={},
            mode=DetailMode.TRANSPARENT,
        )
    if end:
        runs.finish(tx, run.id, state=runs.RunState.COMPLETED, reason="", audience=[])
    return run.id


def _found(database: Database, viewer: Viewer, query: str, scope: Scope = EVERYWHERE) -> list[str]:
    hits = database.read_now(lambda s: search(s, viewer, parse(query), 50, scope))
    return sorted(hit.text for hit in hits)


async def _indexed(database: Database, batch: int = BATCH) -> RecallIndexer:
    indexer = RecallIndexer(database, batch=batch)
    await indexer.catch_up()
    return indexer


async def test_query_words_phrases_prefixes_and_or_mean_the_same_on_each_backend(
    database: Database,
) -> None:
    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        _turn(tx, "p_a", "We ate at Trattoria Nonna Rosa in March", "Noted: Nonna Rosa.")
        _turn(tx, "p_a", "The heron trail by the lake", "A lovely walk, the lake trail.")
        _turn(tx, "p_a", "Café au lait, e-mail me@example.com", "Done: sent to me@example.com")

    await database.write(unit)
    await _indexed(database)
    assert _found(database, ALICE, "nonna rosa") == [
        "Noted: Nonna Rosa.",
        "We ate at Trattoria Nonna Rosa in March",
    ]
    assert _found(database, ALICE, "rosa march") == ["We ate at Trattoria Nonna Rosa in March"]
    assert _found(database, ALICE, '"lake trail"') == ["A lovely walk, the lake trail."]
    assert _found(database, ALICE, '"trail lake"') == []
    assert _found(database, ALICE, "tratt*") == ["We ate at Trattoria Nonna Rosa in March"]
    assert _found(database, ALICE, "heron OR trattoria") == [
        "The heron trail by the lake",
        "We ate at Trattoria Nonna Rosa in March",
    ]
    # Words of letters and digits, in any script, case folded, diacritics kept.
    assert _found(database, ALICE, "CAFÉ") == ["Café au lait, e-mail me@example.com"]
    assert _found(database, ALICE, "cafe") == []
    assert _found(database, ALICE, "example") == [
        "Café au lait, e-mail me@example.com",
        "Done: sent to me@example.com",
    ]


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ('"heron trail', True),
        ("heron:trail", True),
        ("(heron", True),
        ("heron)", True),
        ("-heron", True),
        ("heron AND trail", True),
        ("heron*:*", True),
        ("'heron' & !trail", True),
        ("OR heron OR", True),
        ("heron\\", True),
        ("^heron", True),
        ("{heron}", True),
        ("heron +trail", True),
        # Operators of the backends are words here: these ask for words the text lacks.
        ("heron NEAR trail", False),
        ("heron NOT trail", False),
        ("NEAR(heron trail, 2)", False),
        ('he"ron', False),
    ],
)
async def test_no_typed_character_is_query_syntax_on_either_backend(
    database: Database, query: str, found: bool
) -> None:
    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        _turn(tx, "p_a", "The heron trail by the lake", "ok")

    await database.write(unit)
    await _indexed(database)
    expected = ["The heron trail by the lake"] if found else []
    assert _found(database, ALICE, query) == expected


@pytest.mark.parametrize("query", ["", "   ", "?!", '""', "***", "x" * 201])
def test_a_query_without_words_or_too_long_is_refused_clearly(query: str) -> None:
    with pytest.raises(InvalidInput, match="query"):
        parse(query)


async def test_only_the_viewers_conversations_and_never_a_sealed_turn(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_alice")
        _conversation(tx, "p_bob", owner="bob")
        _turn(tx, "p_alice", "my insomnia diary", "ok", sealed=True)
        _turn(tx, "p_alice", "the blue heron", "ok")
        _turn(tx, "p_bob", "bob's heron and insomnia", "ok")

    await database.write(unit)
    await _indexed(database)
    assert _found(database, ALICE, "heron") == ["the blue heron"]
    assert _found(database, ALICE, "insomnia") == []
    assert _found(database, BOB, "heron") == ["bob's heron and insomnia"]
    assert _found(database, BOB, "insomnia") == ["bob's heron and insomnia"]
    stored = database.read_now(
        lambda s: s.scalar(select(func.count()).where(models.RecallEntry.text.like("%diary%")))
    )
    assert stored == 0


async def test_a_running_runs_messages_wait_for_its_end(database: Database) -> None:
    run_ids: list[str] = []

    def started(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        run_ids.append(_turn(tx, "p_a", "the heron question", "thinking", end=False))

    await database.write(started)
    indexer = await _indexed(database)
    assert _found(database, ALICE, "heron") == []

    def ended(tx: WriteTx) -> None:
        runs.finish(tx, run_ids[0], state=runs.RunState.COMPLETED, reason="", audience=[])

    await database.write(ended)
    await indexer.catch_up()
    assert _found(database, ALICE, "heron") == ["the heron question"]


async def test_memory_summaries_and_tool_results_are_found_and_follow_changes(
    database: Database,
) -> None:
    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        write_entry(tx, "p_a", "diet", "Alice is allergic to walnuts", run_id="")
        tx.insert(
            models.Summary(
                conversation_key="p_a",
                through_message_id=7,
                generation=1,
                text="Earlier: Alice booked the Lisbon flight",
                created_at=START,
            )
        )
        tx.event("context_compacted", "p_a", [], {"generation": 1})
        run = runs.start(tx, key="p_a", trigger="user", mode="summary", audience=[])
        append_message(
            tx,
            [],
            key="p_a",
            run_id=run.id,
            role="tool",
            text="raw secret output zebra",
            payload={
                "tool_call_id": "c1",
                "detail_mode": "summary",
                "result_summary": "listed 3 files",
            },
            mode=DetailMode.SUMMARY,
        )
        runs.finish(tx, run.id, state=runs.RunState.COMPLETED, reason="", audience=[])

    await database.write(unit)
    indexer = await _indexed(database)
    assert _found(database, ALICE, "walnuts") == ["Alice is allergic to walnuts"]
    assert _found(database, ALICE, "lisbon") == ["Earlier: Alice booked the Lisbon flight"]
    # A summary-mode call's result is found by what a person is shown of it, never its raw text.
    assert _found(database, ALICE, "files") == ["listed 3 files"]
    assert _found(database, ALICE, "zebra") == []

    def changed(tx: WriteTx) -> None:
        write_entry(tx, "p_a", "diet", "Alice is allergic to peanuts", run_id="")

    await database.write(changed)
    await indexer.catch_up()
    assert _found(database, ALICE, "walnuts") == []
    assert _found(database, ALICE, "peanuts") == ["Alice is allergic to peanuts"]

    await database.write(lambda tx: delete_entry(tx, "p_a", "diet", run_id=""))
    await indexer.catch_up()
    assert _found(database, ALICE, "peanuts") == []


async def test_the_recall_tools_own_results_are_not_indexed(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        run = runs.start(tx, key="p_a", trigger="user", mode="transparent", audience=[])
        for call, tool, said in (("c1", "recall", "heron trail found"), ("c2", "echo", "otter")):
            append_message(
                tx,
                [],
                key="p_a",
                run_id=run.id,
                role="tool",
                text=said,
                payload={"tool_call_id": call, "tool_name": tool, "detail_mode": "transparent"},
                mode=DetailMode.TRANSPARENT,
            )
        runs.finish(tx, run.id, state=runs.RunState.COMPLETED, reason="", audience=[])

    await database.write(unit)
    await _indexed(database)
    assert _found(database, ALICE, "heron") == []
    assert _found(database, ALICE, "otter") == ["otter"]


async def test_deleting_a_conversation_removes_its_rows(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        _turn(tx, "p_a", "the heron trail", "ok")

    await database.write(unit)
    await _indexed(database)
    assert _found(database, ALICE, "heron") == ["the heron trail"]
    await database.write(
        lambda tx: tx.session.execute(
            models.Conversation.__table__.delete().where(models.Conversation.key == "p_a")
        )
    )
    assert _found(database, ALICE, "heron") == []
    count = database.read_now(lambda s: s.scalar(select(func.count(models.RecallEntry.id))))
    assert count == 0
    if database.read_now(lambda s: s.get_bind().dialect.name) == "sqlite":
        # The FTS5 index itself holds the word no more (its delete trigger ran on the cascade).
        fts = database.read_now(
            lambda s: s.scalar(
                text("SELECT count(*) FROM recall_fts WHERE recall_fts MATCH 'heron'")
            )
        )
        assert fts == 0


async def test_a_scope_narrows_to_one_conversation_and_a_time_range(database: Database) -> None:
    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        _conversation(tx, "p_b")
        _turn(tx, "p_a", "heron one", "ok")
        _turn(tx, "p_b", "heron two", "ok")

    await database.write(unit)
    await _indexed(database)
    assert _found(database, ALICE, "heron", Scope(conversation_key="p_b")) == ["heron two"]
    later = datetime(2100, 1, 1, tzinfo=UTC)
    assert _found(database, ALICE, "heron", Scope(since=later)) == []
    assert _found(database, ALICE, "heron", Scope(until=later)) == ["heron one", "heron two"]


def test_a_snippet_shows_the_text_around_the_first_word_found() -> None:
    text = "x " * 200 + "the Nonna Rosa trattoria " + "y " * 200
    shown = snippet(text, parse("rosa"))
    assert "Nonna Rosa" in shown
    assert shown.startswith("…") and shown.endswith("…")


async def test_a_new_indexer_resumes_from_the_committed_cursor_and_adds_nothing_twice(
    database: Database,
) -> None:
    def first(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        _turn(tx, "p_a", "heron one", "ok")

    await database.write(first)
    await _indexed(database)
    await database.write(lambda tx: _turn(tx, "p_a", "heron two", "ok"))
    await _indexed(database)  # a fresh indexer, as after a restart
    await _indexed(database)
    assert _found(database, ALICE, "heron") == ["heron one", "heron two"]
    count = database.read_now(lambda s: s.scalar(select(func.count(models.RecallEntry.id))))
    assert count == 4


async def test_first_units_at_once_build_the_index_once(store_url: str, database: Database) -> None:
    """Two Minds (or a search catching up beside the indexer) may start the first index at
    once: one builds it, the other waits on the cursor and finds it built."""

    def first(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        _turn(tx, "p_a", "heron one", "ok")

    await database.write(first)
    other = Database.open(store_url)
    try:
        for _ in range(5):
            await database.write(
                lambda tx: tx.session.execute(
                    delete(models.Cursor).where(models.Cursor.name == "recall")
                )
            )
            await database.write(lambda tx: tx.session.execute(delete(models.RecallEntry)))
            steps = [RecallIndexer(db).step() for db in (database, other, database, other)]
            await asyncio.gather(*steps)
            count = database.read_now(lambda s: s.scalar(select(func.count(models.RecallEntry.id))))
            assert count == 2
        assert _found(database, ALICE, "heron") == ["heron one"]
    finally:
        await other.close()


@pytest.mark.parametrize("batch", [1, 200])
async def test_one_batch_or_one_event_at_a_time_indexes_the_same_rows(
    database: Database, batch: int
) -> None:
    """A batch's appended messages and ended runs are indexed together: what is indexed
    depends on the state stored, never on how the events were grouped."""
    indexer = await _indexed(database, batch)  # its cursor set: it follows the events
    running: list[str] = []

    def unit(tx: WriteTx) -> None:
        _conversation(tx, "p_a")
        ended = _turn(tx, "p_a", "heron ended", "ok ended")
        _turn(tx, "p_a", "heron sealed", "ok sealed", sealed=True)
        running.append(_turn(tx, "p_a", "heron running", "ok running", end=False))
        for run_id, said in ((None, "heron outside any run"), (ended, "heron after its end")):
            append_message(
                tx,
                [],
                key="p_a",
                run_id=run_id,
                role="assistant",
                text=said,
                payload={},
                mode=DetailMode.TRANSPARENT,
            )

    await database.write(unit)
    await indexer.catch_up()
    assert _found(database, ALICE, "heron") == [
        "heron after its end",
        "heron ended",
        "heron outside any run",
    ]

    def end(tx: WriteTx) -> None:
        runs.finish(tx, running[0], state=runs.RunState.COMPLETED, reason="", audience=[])

    await database.write(end)
    await indexer.catch_up()
    assert "heron running" in _found(database, ALICE, "heron")
    count = database.read_now(lambda s: s.scalar(select(func.count(models.RecallEntry.id))))
    assert count == 6  # each indexed message once: two turns of two, and the two alone
