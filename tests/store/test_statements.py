"""Hot statements (`mind.store.statements`): what they write reads back the same through the
ORM on each backend, defaults are filled as SQLAlchemy would, and what they cannot run is
refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import sqlite

from mind.store.database import Database
from mind.store.models import Conversation, Run
from mind.store.statements import prepare
from mind.store.write_tx import WriteTx

RUN = select(Run.__table__).where(Run.id == bindparam("run_id"))
RENAME = update(Run).where(Run.id == bindparam("run_id")).values(reason=bindparam("reason"))


async def test_an_inserted_row_reads_back_the_same_through_the_orm(database: Database) -> None:
    started = datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=timezone(timedelta(hours=2)))

    def unit(tx: WriteTx) -> Run:
        tx.insert(Conversation(key="p_a", owner="alice"))
        return tx.insert(
            Run(
                id="run_1",
                conversation_key="p_a",
                permissions={"effects": ["read"], "trust": "é"},
                started_at=started,
            )
        )

    written = await database.write(unit)
    # Defaults come back on the object as they were stored.
    assert (written.state, written.trigger, written.steps, written.usage) == (
        "running",
        "user",
        0,
        {},
    )
    stored = await database.read(lambda session: session.get(Run, "run_1"))
    assert stored.permissions == {"effects": ["read"], "trust": "é"}
    assert stored.started_at == started.astimezone(UTC)
    assert stored.state == "running"


async def test_a_select_converts_values_like_the_orm_and_an_update_counts_its_rows(
    database: Database,
) -> None:
    started = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)

    def unit(tx: WriteTx) -> tuple[int, int]:
        tx.session.add(Conversation(key="p_a", owner="alice"))
        tx.session.add(Run(id="run_1", conversation_key="p_a", usage={"n": 1}, started_at=started))
        return tx.execute(RENAME, run_id="run_1", reason="why"), tx.execute(
            RENAME, run_id="run_missing", reason="why"
        )

    assert await database.write(unit) == (1, 0)
    row = await database.first(RUN, run_id="run_1")
    assert (row.reason, row.usage, row.started_at) == ("why", {"n": 1}, started)
    assert await database.first(RUN, run_id="run_missing") is None


def test_a_list_parameter_is_refused_when_prepared() -> None:
    with pytest.raises(ValueError, match="list parameter"):
        prepare(select(Run.id).where(Run.state.in_(["running", "done"])), sqlite.dialect())


async def test_a_missing_parameter_is_named(database: Database) -> None:
    with pytest.raises(KeyError, match="run_id"):
        await database.first(RUN)
