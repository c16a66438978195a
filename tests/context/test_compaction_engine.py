"""The compaction engine against a real store (SQLite and PostgreSQL) and a recording model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mind.context import records
from mind.context.budget import Budget, TokenEstimator
from mind.context.engine import CompactionEngine
from mind.conversation.history import ContextSummary
from mind.core.view import provider_messages
from mind.errors import WrongState
from mind.events.views import CompactionTrigger, CompactionView
from mind.providers.base import (
    EventSink,
    ProviderRequest,
    ProviderResult,
    ToolCall,
)
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from tobe.config import ContextSettings

KEY = "p_engine"
START = datetime(2026, 3, 1, tzinfo=UTC)


class RecordingModel:
    """Answers every summarising request with a numbered summary, and keeps the requests."""

    name = "recording"
    model = "recording"

    def __init__(self) -> None:
        self.requests: list[ProviderRequest] = []

    async def complete(self, request: ProviderRequest, on_event: EventSink) -> ProviderResult:
        self.requests.append(request)
        return ProviderResult(text=f"summary {len(self.requests)}")

    async def aclose(self) -> None:
        return None


async def _conversation(database: Database, turns: int, text: str) -> None:
    """`turns` batches: a user message, an assistant call, its result, an answer."""

    def unit(tx: WriteTx) -> None:
        tx.session.add(models.Conversation(key=KEY, owner="alice"))
        tx.session.flush()
        at = START
        for turn in range(turns):
            call = ToolCall(f"call_{turn}", "current_time", {}, "{}")
            rows = [
                ("user", f"turn {turn}: {text}", {}),
                (
                    "assistant",
                    "",
                    {
                        "tool_calls": [
                            {
                                "id": call.id,
                                "name": call.name,
                                "arguments": {},
                                "raw_arguments": "{}",
                            }
                        ]
                    },
                ),
                (
                    "tool",
                    f"result {turn}: {text}",
                    {"tool_call_id": call.id, "tool_name": call.name},
                ),
                ("assistant", f"answer {turn}", {}),
            ]
            for role, body, payload in rows:
                at += timedelta(seconds=1)
                tx.session.add(
                    models.Message(
                        conversation_key=KEY, role=role, text=body, payload=payload, created_at=at
                    )
                )

    await database.write(unit)


def _engine(database: Database, model: RecordingModel, window: int) -> CompactionEngine:
    settings = ContextSettings(reserve_tokens=0, summary_tokens=128)
    budget = Budget(context_window=window, output_tokens=128, reserve_tokens=0)
    return CompactionEngine(database, model, budget, TokenEstimator(3.0), settings)


async def test_a_prefix_larger_than_the_window_is_summarised_in_chunks_never_splitting_a_batch(
    database: Database, database_events: list[models.OutboxEvent]
) -> None:
    await _conversation(database, turns=20, text="x" * 600)
    model = RecordingModel()
    engine = _engine(database, model, window=2_000)

    compacted = await engine.compact(KEY, ["alice"], trigger=CompactionTrigger.BUDGET)

    assert compacted.view.summary_calls == len(model.requests) > 1, "done in chunks"
    # Each later chunk folds the previous chunk's summary in: a summary of summaries.
    for number, request in enumerate(model.requests[1:], start=1):
        assert request.messages[0].text.startswith(f"Earlier summary:\nsummary {number}")
    assert all(r.max_output_tokens == 128 for r in model.requests)
    assert compacted.summary.text == f"summary {len(model.requests)}"
    assert compacted.messages[0].role != "tool", "the kept messages start a batch"
    assert compacted.messages[0].id == compacted.view.through_message_id + 1
    stored = await records.load(database, KEY)
    assert stored.summary == compacted.summary
    assert [m.id for m in stored.messages] == [m.id for m in compacted.messages]
    assert [e.type for e in database_events][-1] == "context_compacted"
    assert CompactionView.from_payload(database_events[-1].payload) == compacted.view


async def test_a_compaction_from_an_older_context_is_refused_and_writes_nothing(
    database: Database, database_events: list[models.OutboxEvent]
) -> None:
    await _conversation(database, turns=4, text="short")
    first = await _engine(database, RecordingModel(), 100_000).compact(
        KEY, ["alice"], trigger=CompactionTrigger.REQUESTED
    )
    assert first.summary.generation == 1
    stale = ContextSummary(1, records.SUMMARY_VERSION, 3, "stale", "", START)
    view = CompactionView(1, 3, 3, 10, 5, CompactionTrigger.REQUESTED, 1, "")
    events_before = len(database_events)

    with pytest.raises(records.SummaryConflict):
        await database.write(
            lambda tx: records.commit_summary(
                tx, key=KEY, audience=["alice"], base=None, summary=stale, view=view
            )
        )

    assert (await records.latest_summary(database, KEY)) == first.summary
    assert len(database_events) == events_before


async def test_a_requested_compaction_with_only_the_latest_batches_has_nothing_to_do(
    database: Database,
) -> None:
    await _conversation(database, turns=3, text="short")
    engine = _engine(database, RecordingModel(), 100_000)
    first = await engine.compact(KEY, ["alice"], trigger=CompactionTrigger.REQUESTED)
    # The last two batches stay: the call with its result, and the answer.
    assert [m.role for m in first.messages] == ["assistant", "tool", "assistant"]
    assert first.messages[0].tool_calls[0].id == first.messages[1].tool_call_id

    with pytest.raises(WrongState, match="as short as compaction can make it"):
        await engine.compact(KEY, ["alice"], trigger=CompactionTrigger.REQUESTED)
    assert await records.latest_summary(database, KEY) == first.summary


def test_the_provider_view_starts_with_the_summary_then_the_messages_after_it() -> None:
    summary = ContextSummary(2, 1, 10, "They chose Lisbon.", "Active Hand: laptop", START)
    messages = provider_messages([], START + timedelta(minutes=1), summary)
    first = messages[0]
    assert first.role == "user"
    assert first.text.startswith("[2026-03-01 00:00:00 GMT] (platform note")
    assert "They chose Lisbon." in first.text and "Active Hand: laptop" in first.text
    assert len(messages) == 2  # the summary and the current-time note
