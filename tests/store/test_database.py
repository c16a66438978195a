"""The store's door: units commit before their callers resume, queued units share a commit
(SQLite), one failing unit never takes the others down, and reads never wait for the writer."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from mind.store.database import Database, WriteTx
from mind.store.migrate import upgrade
from mind.store.models import Conversation, Message, OutboxEvent


def add_conversation(key: str) -> Callable[[WriteTx], str]:
    def unit(tx: WriteTx) -> str:
        tx.session.add(Conversation(key=key, owner="alice"))
        tx.event("conversation_created", key, ["alice"], {"key": key})
        return key

    return unit


def conversation_keys(session: Session) -> list[str]:
    return list(session.scalars(select(Conversation.key).order_by(Conversation.key)))


def fails(tx: WriteTx) -> None:
    tx.session.add(Conversation(key="p_doomed", owner="alice"))
    tx.session.flush()
    raise LookupError("the unit changed its mind")


async def test_a_unit_is_committed_and_its_events_published_before_its_caller_resumes(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    assert await database.write(add_conversation("p_one")) == "p_one"
    assert [event.conversation_key for event in database_events] == ["p_one"]
    assert await database.read(conversation_keys) == ["p_one"]


async def test_a_failing_unit_changes_nothing_and_its_caller_gets_the_error(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    with pytest.raises(LookupError, match="changed its mind"):
        await database.write(fails)
    assert await database.read(conversation_keys) == []
    assert database_events == []


class HeldWriter:
    """Keeps the writer thread busy in a first unit, so the next ones queue into one group."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.entered = threading.Event()
        self.release = threading.Event()

    def unit(self, tx: WriteTx) -> str:
        self.entered.set()
        self.release.wait(10)
        return add_conversation("p_first")(tx)

    async def __aenter__(self) -> asyncio.Task[str]:
        first = asyncio.create_task(self.database.write(self.unit))
        await asyncio.to_thread(self.entered.wait, 10)
        return first

    async def __aexit__(self, *_exc: object) -> None:
        self.release.set()


async def queue_behind(held: HeldWriter, *units: Callable[[WriteTx], object]) -> list[object]:
    async with held as first:
        queued = [asyncio.create_task(held.database.write(unit)) for unit in units]
        await asyncio.sleep(0.05)  # let every write reach the writer's queue
    return await asyncio.gather(first, *queued, return_exceptions=True)


@pytest.mark.parametrize("store_backend", ["sqlite"])
async def test_queued_units_share_one_commit(database: Database) -> None:
    units = [add_conversation(f"p_{n}") for n in range(8)]
    before = database.stats.commits
    results = await queue_behind(HeldWriter(database), *units)
    assert results == ["p_first"] + [f"p_{n}" for n in range(8)]
    # The held unit commits alone; the eight queued behind it commit together.
    assert database.stats.commits - before == 2
    assert len(await database.read(conversation_keys)) == 9


@pytest.mark.parametrize("store_backend", ["sqlite"])
async def test_a_failing_unit_in_a_group_rolls_back_alone(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    results = await queue_behind(
        HeldWriter(database), add_conversation("p_a"), fails, add_conversation("p_b")
    )
    assert results[0] == "p_first"
    assert results[1] == "p_a"
    assert isinstance(results[2], LookupError)
    assert results[3] == "p_b"
    assert await database.read(conversation_keys) == ["p_a", "p_b", "p_first"]
    assert [event.conversation_key for event in database_events] == ["p_first", "p_a", "p_b"]


def breaks_the_commit(tx: WriteTx) -> None:
    """Passes inside its unit but makes COMMIT itself fail (a deferred foreign key)."""
    tx.session.execute(text("PRAGMA defer_foreign_keys = ON"))
    tx.session.add(Message(conversation_key="p_nobody", role="user", text="orphan"))


@pytest.mark.parametrize("store_backend", ["sqlite"])
async def test_when_a_group_commit_fails_no_unit_of_the_group_is_acknowledged(
    database: Database, database_events: list[OutboxEvent]
) -> None:
    results = await queue_behind(
        HeldWriter(database), add_conversation("p_a"), breaks_the_commit, add_conversation("p_b")
    )
    assert results[0] == "p_first"
    assert all(isinstance(result, IntegrityError) for result in results[1:])
    assert await database.read(conversation_keys) == ["p_first"]
    assert [event.conversation_key for event in database_events] == ["p_first"]
    # The writer goes on: the next unit commits.
    assert await database.write(add_conversation("p_after")) == "p_after"


@pytest.mark.parametrize("store_backend", ["sqlite"])
async def test_a_unit_whose_caller_was_cancelled_still_commits(database: Database) -> None:
    held = HeldWriter(database)
    async with held:
        orphan = asyncio.create_task(database.write(add_conversation("p_orphan")))
        await asyncio.sleep(0.05)
        orphan.cancel()
    with pytest.raises(asyncio.CancelledError):
        await orphan
    await database.write(add_conversation("p_next"))
    assert await database.read(conversation_keys) == ["p_first", "p_next", "p_orphan"]


@pytest.mark.parametrize("store_backend", ["sqlite"])
async def test_reads_do_not_wait_for_a_unit_in_progress(database: Database) -> None:
    await database.write(add_conversation("p_before"))
    held = HeldWriter(database)
    async with held:
        # The writer holds the write lock inside an open transaction: a read neither waits
        # nor sees the unit's change.
        seen = await asyncio.wait_for(database.read(conversation_keys), 5)
    assert seen == ["p_before"]


async def test_close_commits_the_units_already_queued(store_url: str) -> None:
    events: list[OutboxEvent] = []
    database = Database.open(store_url, on_commit=events.extend)
    writes = [asyncio.create_task(database.write(add_conversation(f"p_{n}"))) for n in range(5)]
    await asyncio.sleep(0)
    await database.close()
    assert [await write for write in writes] == [f"p_{n}" for n in range(5)]
    reopened = Database.open(store_url)
    try:
        assert len(await reopened.read(conversation_keys)) == 5
        with pytest.raises(RuntimeError, match="closed"):
            await database.write(add_conversation("p_late"))
    finally:
        await reopened.close()


async def test_events_of_one_group_are_published_in_commit_order(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'tobe.db'}"
    await asyncio.to_thread(upgrade, url)
    published: list[OutboxEvent] = []
    database = Database.open(url, on_commit=published.extend)
    try:
        await asyncio.gather(*(database.write(add_conversation(f"p_{n}")) for n in range(20)))
        ids = [event.id for event in published]
        assert ids == sorted(ids) and len(ids) == 20
        stored = await database.read(
            lambda session: session.scalar(select(func.count()).select_from(OutboxEvent))
        )
        assert stored == 20
    finally:
        await database.close()
