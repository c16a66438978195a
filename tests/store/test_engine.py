"""Engine setup: driver normalisation, SQLite pragmas, and writers that wait instead of failing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import IntegrityError, OperationalError

from mind.store.database import Database
from mind.store.engine import (
    SQLITE_BUSY_TIMEOUT_MS,
    create_migration_engine,
    create_read_engine,
    create_write_engine,
    sync_url,
)
from mind.store.migrate import upgrade
from mind.store.models import Conversation, Message
from mind.store.write_tx import WriteTx


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("sqlite:///x.db", "sqlite"),
        ("sqlite+aiosqlite:///x.db", "sqlite"),
        ("postgresql://u@h/db", "postgresql+psycopg"),
        ("postgres://u@h/db", "postgresql+psycopg"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg"),
    ],
)
def test_urls_get_the_store_drivers(url: str, driver: str) -> None:
    assert sync_url(url).drivername == driver


@pytest.mark.parametrize(
    "create", [create_write_engine, create_read_engine, create_migration_engine]
)
def test_other_databases_are_refused(create: Callable[[str], Engine]) -> None:
    with pytest.raises(ValueError, match="unsupported database"):
        create("mysql://u@h/db")


def test_every_sqlite_connection_gets_the_pragmas(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tobe.db'}"
    writes, reads = create_write_engine(url), create_read_engine(url)
    names = ("journal_mode", "foreign_keys", "busy_timeout", "synchronous", "query_only")
    try:
        found = {}
        for role, engine in (("write", writes), ("read", reads)):
            with engine.connect() as connection:
                found[role] = [
                    connection.exec_driver_sql(f"PRAGMA {name}").scalar() for name in names
                ]
        # 1 = NORMAL; only the read connections refuse writes.
        assert found["write"] == ["wal", 1, SQLITE_BUSY_TIMEOUT_MS, 1, 0]
        assert found["read"] == ["wal", 1, SQLITE_BUSY_TIMEOUT_MS, 1, 1]
    finally:
        reads.dispose()
        writes.dispose()


def test_reads_never_wait_for_an_open_write_transaction(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tobe.db'}"
    upgrade(url)
    writes, reads = create_write_engine(url), create_read_engine(url)

    def count() -> int | None:
        with reads.connect() as reader:
            return reader.scalar(select(func.count()).select_from(Conversation))

    try:
        with writes.connect() as writer, ThreadPoolExecutor(1) as pool:
            writer.execute(
                Conversation.__table__.insert().values(key="p_open", owner="alice", title="")
            )
            # The write lock is held and the insert is not committed: a reader neither waits
            # (its busy timeout is far longer than this) nor sees it.
            assert pool.submit(count).result(timeout=1.0) == 0
            writer.commit()
        assert count() == 1
    finally:
        reads.dispose()
        writes.dispose()


def test_a_read_connection_refuses_to_write(tmp_path: Path) -> None:
    reads = create_read_engine(f"sqlite:///{tmp_path / 'tobe.db'}")
    try:
        with reads.connect() as reader, pytest.raises(OperationalError, match="readonly"):
            reader.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    finally:
        reads.dispose()


async def test_foreign_keys_are_enforced(database: Database) -> None:
    def orphan(tx: WriteTx) -> None:
        tx.session.add(Message(conversation_key="p_nobody", role="user", text="hi"))

    with pytest.raises(IntegrityError):
        await database.write(orphan)


async def test_writers_of_two_processes_queue_instead_of_failing(store_url: str) -> None:
    """Two stores on one database (the Mind and the management CLI): units that read, pause,
    then write must wait for each other's transactions, not fail them."""
    first, second = Database.open(store_url), Database.open(store_url)
    try:
        await first.write(lambda tx: tx.session.add(Conversation(key="p_a", owner="alice")))

        def read_then_write(n: int) -> Callable[[WriteTx], None]:
            def unit(tx: WriteTx) -> None:
                count = tx.session.scalar(select(func.count()).select_from(Message))
                time.sleep(0.01)  # hold the transaction open while the other store writes
                tx.session.add(
                    Message(conversation_key="p_a", role="note", text=f"{n} saw {count}")
                )

            return unit

        await asyncio.gather(
            *(store.write(read_then_write(n)) for n in range(5) for store in (first, second))
        )
        count = await second.read(
            lambda session: session.scalar(select(func.count()).select_from(Message))
        )
        assert count == 10
    finally:
        await first.close()
        await second.close()
