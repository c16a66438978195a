"""Engine setup: driver normalisation, SQLite pragmas, and writers that wait instead of failing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mind.store.engine import (
    SQLITE_BUSY_TIMEOUT_MS,
    async_url,
    create_engine,
    create_read_engine,
    sync_url,
)
from mind.store.migrate import upgrade
from mind.store.models import Conversation, Message

Sessions = async_sessionmaker[AsyncSession]


@pytest.mark.parametrize(
    ("url", "async_driver", "sync_driver"),
    [
        ("sqlite:///x.db", "sqlite+aiosqlite", "sqlite"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite", "sqlite"),
        ("postgresql://u@h/db", "postgresql+psycopg", "postgresql+psycopg"),
        ("postgres://u@h/db", "postgresql+psycopg", "postgresql+psycopg"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg", "postgresql+psycopg"),
    ],
)
def test_plain_urls_get_the_store_drivers(url: str, async_driver: str, sync_driver: str) -> None:
    assert async_url(url).drivername == async_driver
    assert sync_url(url).drivername == sync_driver


def test_other_databases_are_refused() -> None:
    with pytest.raises(ValueError, match="unsupported database"):
        create_engine("mysql://u@h/db")


async def test_every_sqlite_connection_gets_the_pragmas(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tobe.db'}"
    writes, reads = create_engine(url), create_read_engine(url)
    names = ("journal_mode", "foreign_keys", "busy_timeout", "synchronous", "query_only")
    try:
        async with writes.connect() as writer, reads.connect() as reader:
            found = {}
            for role, connection in (("write", writer), ("read", reader)):
                found[role] = [
                    (await connection.exec_driver_sql(f"PRAGMA {name}")).scalar() for name in names
                ]
                await connection.commit()  # end the transaction, keep the connection
        # 1 = NORMAL; only the read connections refuse writes.
        assert found["write"] == ["wal", 1, SQLITE_BUSY_TIMEOUT_MS, 1, 0]
        assert found["read"] == ["wal", 1, SQLITE_BUSY_TIMEOUT_MS, 1, 1]
    finally:
        await reads.dispose()
        await writes.dispose()


async def test_reads_never_wait_for_an_open_write_transaction(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tobe.db'}"
    await asyncio.to_thread(upgrade, url)
    writes, reads = create_engine(url), create_read_engine(url)
    try:
        async with writes.connect() as writer:
            await writer.execute(
                Conversation.__table__.insert().values(key="p_open", owner="alice", title="")
            )
            # The write lock is held and the insert is not committed: a reader neither waits
            # nor sees it.
            async with reads.connect() as reader:
                seen = await asyncio.wait_for(
                    reader.scalar(select(func.count()).select_from(Conversation)), 1.0
                )
            assert seen == 0
            await writer.commit()
        async with reads.connect() as reader:
            assert await reader.scalar(select(func.count()).select_from(Conversation)) == 1
    finally:
        await reads.dispose()
        await writes.dispose()


async def test_a_read_connection_refuses_to_write(tmp_path: Path) -> None:
    reads = create_read_engine(f"sqlite:///{tmp_path / 'tobe.db'}")
    try:
        async with reads.connect() as reader:
            with pytest.raises(OperationalError, match="readonly"):
                await reader.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    finally:
        await reads.dispose()


async def test_foreign_keys_are_enforced(sessions: Sessions) -> None:
    with pytest.raises(IntegrityError):
        async with sessions() as session, session.begin():
            session.add(Message(conversation_key="p_nobody", role="user", text="hi"))


async def test_concurrent_read_then_write_transactions_all_commit(sessions: Sessions) -> None:
    """Each transaction reads, pauses, then writes: SQLite must queue them, not fail them."""
    async with sessions() as session, session.begin():
        session.add(Conversation(key="p_a", owner="alice"))

    async def read_then_write(n: int) -> None:
        async with sessions() as session, session.begin():
            count = await session.scalar(select(func.count()).select_from(Message))
            await asyncio.sleep(0.01)
            session.add(Message(conversation_key="p_a", role="note", text=f"{n} saw {count}"))

    await asyncio.gather(*(read_then_write(n) for n in range(5)))
    async with sessions() as session:
        assert await session.scalar(select(func.count()).select_from(Message)) == 5
        assert (await session.execute(text("SELECT 1"))).scalar() == 1
