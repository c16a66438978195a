"""The store's door (`mind.store.database`): a unit's value comes back once it is committed,
units fail alone, committed events reach the callback, reads never wait for the writer."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from helpers.eventually import eventually_async
from sqlalchemy import create_engine, func, inspect, select, text, update
from sqlalchemy.exc import IntegrityError

from mind.store.database import Database
from mind.store.group_writer import MAX_GROUP
from mind.store.models import Conversation, Message, OutboxEvent
from mind.store.write_tx import WriteTx

# Group commit is the SQLite writer's; on PostgreSQL every unit commits on its own.
sqlite_only = pytest.mark.parametrize("store_backend", ["sqlite"])

WAIT = 10.0


def start(key: str) -> Callable[[WriteTx], Conversation]:
    """A unit creating conversation `key` and announcing it."""

    def unit(tx: WriteTx) -> Conversation:
        conversation = Conversation(key=key, owner="alice")
        tx.session.add(conversation)
        tx.event("conversation.created", key, ["alice"], {})
        return conversation

    return unit


def fail_after(unit: Callable[[WriteTx], Any], error: Exception) -> Callable[[WriteTx], None]:
    """`unit`, then `error`: what it wrote must not survive."""

    def failing(tx: WriteTx) -> None:
        unit(tx)
        tx.session.flush()
        raise error

    return failing


async def stored_keys(database: Database) -> list[str]:
    return await database.read(
        lambda session: list(session.scalars(select(Conversation.key).order_by(Conversation.key)))
    )


@asynccontextmanager
async def writer_held(database: Database) -> AsyncIterator[None]:
    """Hold the writer in a unit for the block: the writes it issues queue up behind it (on
    SQLite, as one group)."""
    holding, release = threading.Event(), threading.Event()

    def hold(_tx: WriteTx) -> None:
        holding.set()
        release.wait(WAIT)

    held = asyncio.create_task(database.write(hold))
    try:
        assert await asyncio.to_thread(holding.wait, WAIT)
        yield
        await asyncio.sleep(0)  # the block's writes queue their units before they first yield
    finally:
        release.set()
        await held


async def queued_together(
    database: Database, units: Sequence[Callable[[WriteTx], Any]]
) -> list[Any]:
    """Each unit's value or exception, the units queued together behind a held writer."""
    async with writer_held(database):
        writes = [asyncio.create_task(database.write(unit)) for unit in units]
    return await asyncio.gather(*writes, return_exceptions=True)


async def test_a_units_value_comes_back_committed_and_detached(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    conversation = await database.write(start("p_a"))
    assert inspect(conversation).detached
    assert (conversation.key, conversation.owner, conversation.title) == ("p_a", "alice", "")
    assert conversation.created_at is not None
    # Committed, and announced before the caller resumed.
    assert await stored_keys(database) == ["p_a"]
    assert [(event.type, event.conversation_key) for event in database_events] == [
        ("conversation.created", "p_a")
    ]


async def test_a_failing_unit_rolls_back_alone(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    def orphan(tx: WriteTx) -> None:
        start("p_c")(tx)
        tx.session.add(Message(conversation_key="p_nobody", role="user", text="hi"))

    results = await queued_together(
        database,
        [
            start("p_a"),
            fail_after(start("p_b"), RuntimeError("changed its mind")),
            orphan,
            start("p_d"),
        ],
    )
    first, failed, refused, last = results
    assert isinstance(failed, RuntimeError) and str(failed) == "changed its mind"
    assert isinstance(refused, IntegrityError)
    assert (first.key, last.key) == ("p_a", "p_d")
    assert await stored_keys(database) == ["p_a", "p_d"]
    assert sorted(event.conversation_key for event in database_events) == ["p_a", "p_d"]


@sqlite_only
async def test_queued_units_share_a_commit_of_at_most_max_group(database: Database) -> None:
    units = [start(f"p_{n:03}") for n in range(MAX_GROUP + 6)]
    results = await queued_together(database, units)
    assert [conversation.key for conversation in results] == await stored_keys(database)
    # The holding unit's commit, then a full group and the rest.
    assert (database.stats.commits, database.stats.units) == (3, 1 + MAX_GROUP + 6)


@sqlite_only
async def test_a_failed_commit_fails_every_unit_of_its_group(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    def break_the_commit(tx: WriteTx) -> None:
        # A deferred foreign key is checked at COMMIT, after every unit ran.
        tx.session.execute(text("PRAGMA defer_foreign_keys = ON"))
        tx.session.add(Message(conversation_key="p_nobody", role="user", text="hi"))

    results = await queued_together(database, [start("p_a"), break_the_commit, start("p_b")])
    assert all(isinstance(result, IntegrityError) for result in results)
    assert await stored_keys(database) == []
    assert database_events == []
    # The writer goes on with the next group.
    await database.write(start("p_c"))
    assert await stored_keys(database) == ["p_c"]


@sqlite_only
async def test_the_writer_outlives_a_group_that_breaks_it(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever goes wrong around a group, its callers hear of it and the next group runs."""
    from mind.store import group_writer as store

    real_commit = store.GroupWriter._commit

    def broken(self: store.GroupWriter, group: list[Any]) -> None:
        monkeypatch.setattr(store.GroupWriter, "_commit", real_commit)
        raise OSError("the disk went away")

    monkeypatch.setattr(store.GroupWriter, "_commit", broken)
    with pytest.raises(OSError, match="disk went away"):
        await asyncio.wait_for(database.write(start("p_a")), WAIT)
    await database.write(start("p_b"))
    assert await stored_keys(database) == ["p_b"]


async def test_a_unit_commits_even_when_its_caller_is_cancelled(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    running, release = threading.Event(), threading.Event()

    def slow(tx: WriteTx) -> Conversation:
        running.set()
        release.wait(WAIT)
        return start("p_a")(tx)

    caller = asyncio.create_task(database.write(slow))
    assert await asyncio.to_thread(running.wait, WAIT)
    caller.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await eventually_async(
        lambda: stored_keys(database),
        WAIT,
        until=lambda keys: keys == ["p_a"],
        what="the cancelled caller's unit stored",
    )
    await eventually_async(lambda: database_events, WAIT, what="the unit's event handed over")
    assert [event.conversation_key for event in database_events] == ["p_a"]


async def test_reads_never_wait_for_a_unit_in_progress(database: Database) -> None:
    writing, release = threading.Event(), threading.Event()

    def slow(tx: WriteTx) -> None:
        start("p_a")(tx)
        tx.session.flush()  # the write transaction is open and holds the row
        writing.set()
        release.wait(WAIT)

    write = asyncio.create_task(database.write(slow))
    try:
        assert await asyncio.to_thread(writing.wait, WAIT)
        async with asyncio.timeout(1.0):
            assert await stored_keys(database) == []
    finally:
        release.set()
    await write
    assert await stored_keys(database) == ["p_a"]


@sqlite_only
async def test_close_commits_the_queued_units_then_refuses_more(store_url: str) -> None:
    database = Database.open(store_url)
    async with writer_held(database):
        writes = [asyncio.create_task(database.write(start(key))) for key in ("p_a", "p_b")]
        closing = asyncio.create_task(database.close())
    await closing
    # Every unit queued before the close was committed and its caller answered.
    assert [write.result().key for write in writes] == ["p_a", "p_b"]
    with pytest.raises(RuntimeError, match="closed"):
        await database.write(start("p_c"))
    engine = create_engine(store_url)
    try:
        with engine.connect() as connection:
            assert connection.scalar(select(func.count()).select_from(Conversation)) == 2
    finally:
        engine.dispose()


async def test_an_inserted_row_comes_back_with_its_key_and_defaults(database: Database) -> None:
    def unit(tx: WriteTx) -> tuple[Message, Message]:
        tx.session.add(Conversation(key="p_rows", owner="alice"))  # flushed before the insert
        first = tx.insert(Message(conversation_key="p_rows", role="user", text="one"))
        second = tx.insert(Message(conversation_key="p_rows", role="note", payload={"k": [1]}))
        return first, second

    first, second = await database.write(unit)
    assert second.id > first.id > 0
    assert (second.text, second.payload, first.payload) == ("", {"k": [1]}, {})
    assert first.created_at is not None
    stored = await database.read(
        lambda session: [
            (m.id, m.role, m.text, m.payload)
            for m in session.scalars(select(Message).order_by(Message.id))
        ]
    )
    assert stored == [(first.id, "user", "one", {}), (second.id, "note", "", {"k": [1]})]


@sqlite_only
async def test_a_unit_sees_what_an_earlier_unit_of_its_group_changed(database: Database) -> None:
    await database.write(start("p_seen"))

    def load(tx: WriteTx) -> Conversation | None:
        # The returned object stays referenced, so the session's identity map keeps it.
        return tx.session.get(Conversation, "p_seen")

    def retitle(tx: WriteTx) -> None:
        # An update that leaves ORM copies alone: one loaded earlier would not see it.
        tx.session.execute(
            update(Conversation)
            .where(Conversation.key == "p_seen")
            .values(title="renamed")
            .execution_options(synchronize_session=False)
        )

    before, _, after = await queued_together(database, [load, retitle, load])
    assert (before.title, after.title) == ("", "renamed")
