"""Two writers ending the same tool call at once (PostgreSQL runs writers concurrently): the
first terminal committed stands, and the other writer goes on without it."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import create_engine, select, text, update

from mind.conversation import runs
from mind.events.views import RunState
from mind.store.database import Database
from mind.store.insert_once import insert_if_absent
from mind.store.models import Conversation, Cursor, Run, ToolProjection

KEY = "p_alice"


async def _waiting_on_a_lock(url: str) -> None:
    """Until some backend of this database waits for a row lock."""
    engine = create_engine(url)
    try:
        for _ in range(500):
            with engine.connect() as connection:
                waiting = connection.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND wait_event_type = 'Lock'"
                    )
                ).scalar()
            if waiting:
                return
            await asyncio.sleep(0.02)
        raise AssertionError("the run's end never waited for the call's row")
    finally:
        engine.dispose()


@pytest.mark.parametrize("store_backend", ["postgresql"], indirect=True)
async def test_a_run_ended_while_its_call_gets_its_terminal_keeps_that_terminal(
    database: Database, store_url: str
) -> None:
    await database.write(
        lambda tx: tx.session.add_all(
            [
                Conversation(key=KEY, owner="alice"),
                Run(id="r1", conversation_key=KEY),
                ToolProjection(
                    tool_call_id="c1",
                    conversation_key=KEY,
                    run_id="r1",
                    tool="echo",
                    admitted_mode="summary",
                ),
            ]
        )
    )
    other = create_engine(store_url)
    try:
        with other.connect() as connection:
            transaction = connection.begin()
            connection.execute(
                update(ToolProjection)
                .where(ToolProjection.tool_call_id == "c1")
                .values(status="succeeded", result_summary="ok")
            )
            # The run's end reads the call as running, then waits for this row's lock.
            ending = asyncio.ensure_future(
                database.write(
                    lambda tx: runs.finish(
                        tx, "r1", state=RunState.INTERRUPTED, reason="stop", audience=["alice"]
                    )
                )
            )
            await _waiting_on_a_lock(store_url)
            transaction.commit()
        ended = await ending
    finally:
        other.dispose()
    assert ended is not None and ended.state == RunState.INTERRUPTED
    call = await database.read(lambda s: s.get(ToolProjection, "c1"))
    assert call is not None and (call.status, call.result_summary) == ("succeeded", "ok")


async def test_a_row_inserted_if_absent_keeps_the_first_value(database: Database) -> None:
    await database.write(lambda tx: insert_if_absent(tx.session, Cursor, name="c", value=1))
    await database.write(lambda tx: insert_if_absent(tx.session, Cursor, name="c", value=2))
    values = await database.read(lambda s: list(s.scalars(select(Cursor.value))))
    assert values == [1]
