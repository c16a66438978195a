"""Recall over branches and child runs, on each store: a branch's copied messages are found in
the branch (a sealed turn's copy never), and a `delegate` child's conversation, which the
person's list leaves out, is never found by the search or the `recall` tool; its result is,
as the parent's tool result."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from mind.conversation import branches, delegations, queries, runs
from mind.conversation.access import Viewer
from mind.conversation.messages import append_message
from mind.events.payloads import conversation_view
from mind.recall.conversations import matching
from mind.recall.indexer import RecallIndexer
from mind.recall.query import parse
from mind.recall.search import search
from mind.recall.tool import RecallTool
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode, ToolContext

ALICE = Viewer("alice")
START = datetime(2026, 3, 14, tzinfo=UTC)
CALL = "call_0123456789abcdef0123456789abcdef"


def _turn(tx: WriteTx, key: str, *said: tuple[str, str], sealed: bool = False) -> int:
    """A run of `said` (role, text) messages, ended; the last message's id."""
    run = runs.start(tx, key=key, trigger="user", mode="transparent", audience=[])
    if sealed:
        tx.session.execute(
            models.Run.__table__.update()
            .where(models.Run.id == run.id)
            .values(sealed={"sleep_log": "health.sleep"})
        )
    last = 0
    for role, text in said:
        last = append_message(
            tx, [], key=key, run_id=run.id, role=role, text=text, payload={},
            mode=DetailMode.TRANSPARENT,
        ).id  # fmt: skip
    runs.finish(tx, run.id, state=runs.RunState.COMPLETED, reason="", audience=[])
    return last


def _hits(database: Database, query: str) -> list[tuple[str, str]]:
    found = database.read_now(lambda s: search(s, ALICE, parse(query), 50))
    return sorted((hit.conversation_key, hit.text) for hit in found)


async def test_a_branchs_copied_messages_are_found_in_the_branch_but_a_sealed_turns_never(
    database: Database,
) -> None:
    def origin(tx: WriteTx) -> int:
        tx.insert(models.Conversation(key="p_origin", owner="alice", created_at=START))
        _turn(tx, "p_origin", ("user", "my insomnia diary"), ("assistant", "ok"), sealed=True)
        return _turn(tx, "p_origin", ("user", "the heron trail"), ("assistant", "a fine walk"))

    point = await database.write(origin)
    indexer = RecallIndexer(database)
    await indexer.catch_up()

    def branch(tx: WriteTx) -> None:
        made = branches.branch(tx, ALICE, "p_origin", point, "p_branch", "")
        view = conversation_view(made.conversation, [])
        tx.event("conversation_created", "p_branch", ["alice"], view.to_payload())

    await database.write(branch)
    await indexer.catch_up()
    assert _hits(database, "heron") == [
        ("p_branch", "the heron trail"),
        ("p_origin", "the heron trail"),
    ]
    assert _hits(database, "insomnia") == []
    # Caught up again, nothing is indexed twice.
    await indexer.catch_up()
    assert len(_hits(database, "walk")) == 2


async def test_a_child_runs_conversation_is_never_found_and_its_result_is_as_the_parents(
    database: Database, tool_context: Callable[[str], ToolContext]
) -> None:
    def unit(tx: WriteTx) -> str:
        tx.insert(models.Conversation(key="p_parent", owner="alice", created_at=START))
        row = delegations.start(
            tx, tool_call_id=CALL, parent_key="p_parent", parent_run_id="run_parent",
            principal="alice", task="compare the kingfisher lodges", profile="",
            mode="transparent", tools=frozenset(), depth=1, max_turns=4, max_tokens=1000,
            deadline_at=START + timedelta(minutes=5),
        )  # fmt: skip
        _turn(
            tx,
            row.child_key,
            ("user", "compare the kingfisher lodges"),
            ("assistant", "the kingfisher lodge by the weir is cheaper"),
        )
        _turn(
            tx,
            "p_parent",
            ("user", "look into lodges"),
            ("assistant", "child: the kingfisher lodge by the weir is cheaper"),
        )
        return row.child_key

    child = await database.write(unit)
    await RecallIndexer(database).catch_up()

    assert _hits(database, "kingfisher") == [
        ("p_parent", "child: the kingfisher lodge by the weir is cheaper")
    ]
    listed = database.read_now(lambda s: queries.list_visible(s, ALICE, 50))
    found = database.read_now(lambda s: matching(s, ALICE, parse("kingfisher"), 50))
    assert [m.conversation.key for m in found] == ["p_parent"]
    assert child not in {c.key for c in listed}
    outcome = await RecallTool(database).run({"query": "kingfisher"}, tool_context("p_parent"))
    assert {r["conversation"] for r in json.loads(outcome.output)["results"]} == {"p_parent"}
    stored = database.read_now(
        lambda s: s.query(models.RecallEntry).filter_by(conversation_key=child).count()
    )
    assert stored == 0
