"""The records of child runs (`mind.conversation.delegations`) on either store backend: one
child per delegating call however often it is replayed, its end written with its run's
terminal, hidden from the person's list, and removed with its parent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from mind.conversation import delegations, queries, runs
from mind.conversation.access import Viewer
from mind.events.views import RunState
from mind.management.conversations import delete_conversation
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx

PARENT = "p_parent"
CALL = "call_0123456789abcdef0123456789abcdef"


def start(tx: WriteTx) -> models.Delegation:
    return delegations.start(
        tx,
        tool_call_id=CALL,
        parent_key=PARENT,
        parent_run_id="run_parent",
        principal="alice",
        task="look into option one",
        profile="",
        mode="transparent",
        tools=frozenset({"current_time"}),
        depth=1,
        max_turns=4,
        max_tokens=1000,
        deadline_at=datetime.now(UTC) + timedelta(minutes=5),
    )


async def started(database: Database) -> str:
    await database.write(lambda tx: tx.session.add(models.Conversation(key=PARENT, owner="alice")))
    first = await database.write(start)
    return first.child_key


async def test_a_replayed_call_starts_no_second_child(database: Database) -> None:
    child = await started(database)
    again = await database.write(start)
    assert again.child_key == child == delegations.child_key_of(CALL)

    def counts(session: object) -> tuple[int | None, ...]:
        return tuple(
            session.scalar(select(func.count()).select_from(model))  # type: ignore[attr-defined]
            for model in (models.Delegation, models.Input)
        )

    assert await database.read(counts) == (1, 1)


async def test_the_child_ends_with_its_run_and_takes_its_last_answer(database: Database) -> None:
    child = await started(database)

    def run_and_answer(tx: WriteTx) -> str:
        run = runs.start(tx, key=child, trigger="user", mode="transparent", audience=["alice"])
        tx.insert(
            models.Message(
                conversation_key=child, run_id=run.id, role="assistant", text="Option one wins."
            )
        )
        return run.id

    run_id = await database.write(run_and_answer)
    assert await database.read(lambda s: delegations.ending(delegations.of_call(s, CALL))) is None
    await database.write(
        lambda tx: runs.finish(tx, run_id, state=RunState.COMPLETED, reason="", audience=["alice"])
    )
    ending = await database.read(lambda s: delegations.ending(delegations.of_call(s, CALL)))
    assert ending == delegations.Ending(delegations.SUCCEEDED, "Option one wins.")


async def test_an_interrupted_child_with_an_open_call_keeps_running(database: Database) -> None:
    child = await started(database)
    run_id = await database.write(
        lambda tx: runs.start(tx, key=child, trigger="user", mode="summary", audience=["alice"]).id
    )
    await database.write(
        lambda tx: delegations.run_ended(tx, child, RunState.INTERRUPTED, "crash", kept_open=True)
    )
    assert await database.read(lambda s: delegations.ending(delegations.of_call(s, CALL))) is None
    await database.write(
        lambda tx: runs.finish(
            tx, run_id, state=RunState.INTERRUPTED, reason="crash", audience=["alice"]
        )
    )
    ending = await database.read(lambda s: delegations.ending(delegations.of_call(s, CALL)))
    assert ending is not None and ending.state == delegations.FAILED
    assert "interrupted before it finished" in ending.result


async def test_a_child_is_not_listed_and_is_deleted_with_its_parent(database: Database) -> None:
    child = await started(database)
    listed = await database.read(
        lambda s: queries.list_visible(s, Viewer(principal="alice"), limit=10)
    )
    assert [view.key for view in listed] == [PARENT]
    deletion = await database.write(lambda tx: delete_conversation(tx.session, PARENT))
    assert deletion.removed["conversations"] == 2
    assert deletion.removed["delegations"] == 1
    left = await database.read(lambda s: s.get(models.Conversation, child))
    assert left is None
