"""A sealed run's Hand task: its arguments and output are stored sealed, read back while the
run's key exists, and gone once it is (both backends)."""

from __future__ import annotations

import json

from sqlalchemy import select

from mind.remote.model import HandResult, NewTask
from mind.remote.registry import Registry
from mind.sealing.cipher import new_key
from mind.sealing.keyring import KeyRing, Queried
from mind.store.database import Database
from mind.store.models import Task
from mind.tools.base import DetailMode

VALUE = "SLEEP-VALUE-1207"


def task() -> NewTask:
    return NewTask(
        conversation_key="p_remote",
        run_id="run_1",
        tool_call_id="call_1",
        hand_name="laptop",
        tool="sleep_log",
        arguments={"night": VALUE},
        detail_mode=DetailMode.TRANSPARENT,
    )


async def stored(database: Database) -> str:
    rows = await database.read(lambda session: list(session.scalars(select(Task))))
    return json.dumps([[row.arguments, row.output, row.error] for row in rows])


async def test_a_sealed_runs_task_values_are_stored_sealed_and_gone_with_its_key(
    database: Database, conversation: str
) -> None:
    ring = KeyRing()
    ring.add("run_1", new_key())
    registry = Registry(database, ring)
    created = await registry.create(task())
    await registry.accept(created.id, 1, hand_name="laptop")
    await registry.finish(created.id, 1, HandResult(ok=True, output=VALUE), hand_name="laptop")
    assert VALUE not in await stored(database)
    live = await registry.get(created.id)
    assert live is not None and (live.arguments, live.output) == ({"night": VALUE}, VALUE)

    ring.shred("run_1", [Queried("health.sleep", "succeeded")])
    gone = await registry.get(created.id)
    assert gone is not None and gone.arguments == {} and gone.arguments_removed
    assert VALUE not in gone.output


async def test_a_task_result_arriving_after_its_sealed_run_ended_is_not_stored(
    database: Database, conversation: str
) -> None:
    ring = KeyRing()
    ring.add("run_1", new_key())
    registry = Registry(database, ring)
    created = await registry.create(task())
    await registry.accept(created.id, 1, hand_name="laptop")
    ring.shred("run_1", [Queried("health.sleep", "cancelled")])
    await registry.finish(created.id, 1, HandResult(ok=True, output=VALUE), hand_name="laptop")
    assert VALUE not in await stored(database)
