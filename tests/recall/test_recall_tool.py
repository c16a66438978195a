"""The `recall` tool on each store: the conversation owner's entries with their conversation,
date, role and message, a scope, and a query it cannot use as a tool error."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

from mind.conversation import runs
from mind.conversation.messages import append_message
from mind.recall.indexer import RecallIndexer
from mind.recall.tool import RecallTool
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode, ToolContext

START = datetime(2026, 3, 14, 12, 30, tzinfo=UTC)


def _said(tx: WriteTx, key: str, owner: str, text: str) -> int:
    tx.insert(models.Conversation(key=key, owner=owner, title=f"{owner}'s", created_at=START))
    run = runs.start(tx, key=key, trigger="user", mode="transparent", audience=[])
    message = append_message(
        tx,
        [],
        key=key,
        run_id=run.id,
        role="user",
        text=text,
        payload={},
        mode=DetailMode.TRANSPARENT,
        at=START,
    )
    runs.finish(tx, run.id, state=runs.RunState.COMPLETED, reason="", audience=[])
    return message.id


async def test_the_tool_returns_the_owners_snippets_with_where_and_when(
    database: Database, tool_context: Callable[[str], ToolContext]
) -> None:
    def unit(tx: WriteTx) -> int:
        _said(tx, "p_bob", "bob", "bob's heron secret")
        _said(tx, "p_other", "alice", "the heron on the lake")
        return _said(tx, "p_here", "alice", "a question")

    await database.write(unit)
    await RecallIndexer(database).catch_up()
    tool = RecallTool(database)
    outcome = await tool.run({"query": "heron"}, tool_context("p_here"))
    assert outcome.ok, outcome.error
    [result] = json.loads(outcome.output)["results"]
    assert result["conversation"] == "p_other" and result["title"] == "alice's"
    assert result["role"] == "user" and result["message_id"] > 0
    assert result["date"] == "2026-03-14T12:30+00:00"
    assert result["snippet"] == "the heron on the lake"

    this = await tool.run({"query": "heron", "conversation": "this"}, tool_context("p_here"))
    assert json.loads(this.output)["results"] == []
    later = await tool.run({"query": "heron", "since": "2026-03-15"}, tool_context("p_here"))
    assert json.loads(later.output)["results"] == []
    day = await tool.run(
        {"query": "heron", "since": "2026-03-14", "until": "2026-03-14"}, tool_context("p_here")
    )
    assert len(json.loads(day.output)["results"]) == 1

    refused = await tool.run({"query": "?!"}, tool_context("p_here"))
    assert not refused.ok and "no word to search for" in refused.error
