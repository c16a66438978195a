"""Engine setup: driver normalisation, SQLite pragmas, and writers that wait instead of failing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mind.store.engine import SQLITE_BUSY_TIMEOUT_MS, async_url, create_engine, sync_url
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
    engine = create_engine(f"sqlite:///{tmp_path / 'tobe.db'}")
    try:
        async with engine.connect() as first, engine.connect() as second:
            for connection in (first, second):
                pragmas = [
                    (await connection.exec_driver_sql(f"PRAGMA {name}")).scalar()
                    for name in ("journal_mode", "foreign_keys", "busy_timeout", "synchronous")
                ]
                assert pragmas == ["wal", 1, SQLITE_BUSY_TIMEOUT_MS, 1]  # 1 = NORMAL
                await connection.commit()  # end the immediate transaction, keep the connection
    finally:
        await engine.dispose()


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
