"""The usage ledger on each backend: buffered rows written in batches, and the reports
summed from them with their estimated cost."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.eventually import eventually_async

from mind.providers.prices import Pricing
from mind.store.database import Database
from mind.store.models import UsageRecord
from mind.usage.ledger import UsageLedger, UsageRow
from mind.usage.reports import Grouping, UsageReports, UsageTotals, usage_report


def row(
    at: str,
    key: str,
    provider: str,
    model: str,
    purpose: str,
    tokens: tuple[int, int, int, int],
) -> UsageRow:
    return UsageRow(
        recorded_at=datetime.fromisoformat(at).replace(tzinfo=UTC),
        conversation_key=key,
        run_id="run_1" if key else "",
        principal="alice" if key else "",
        provider=provider,
        model=model,
        purpose=purpose,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        cached_tokens=tokens[2],
        reasoning_tokens=tokens[3],
    )


# gpt-4o: $2.50 input, $1.25 cached input, $10 output per million tokens.
# claude-haiku-4-5: $1, $0.10, $5. `local-model` has no price.
ROWS = [
    row("2026-12-01T10:00", "p_alice_1", "openai", "gpt-4o", "turn", (1000, 200, 400, 0)),
    row("2026-12-01T11:00", "p_alice_1", "openai", "gpt-4o", "extract", (500, 50, 0, 0)),
    row("2026-12-02T09:00", "p_bob_1", "openai", "local-model", "turn", (300, 30, 0, 0)),
    row("2026-12-02T23:30", "", "anthropic", "claude-haiku-4-5", "review", (2000, 100, 1000, 7)),
]
TURN_1 = (600 * 2.5 + 400 * 1.25 + 200 * 10) / 1e6
EXTRACT_1 = (500 * 2.5 + 50 * 10) / 1e6
REVIEW = (1000 * 1 + 1000 * 0.10 + 100 * 5) / 1e6


async def recorded(database: Database) -> UsageReports:
    ledger = UsageLedger(database, interval=3600)
    for each in ROWS:
        ledger.record(each)
    await ledger.close()
    return UsageReports(database, Pricing.of())


async def test_rows_wait_in_memory_until_a_flush_writes_them(
    database: Database,
) -> None:
    ledger = UsageLedger(database, interval=3600)
    for each in ROWS:
        ledger.record(each)

    assert ledger.pending == 4
    assert await database.read(lambda s: s.query(UsageRecord).count()) == 0
    await ledger.flush()
    assert ledger.pending == 0
    stored = await database.read(lambda s: s.query(UsageRecord).order_by(UsageRecord.id).all())
    assert [(r.conversation_key, r.purpose, r.cached_tokens) for r in stored] == [
        ("p_alice_1", "turn", 400),
        ("p_alice_1", "extract", 0),
        ("p_bob_1", "turn", 0),
        ("", "review", 1000),
    ]
    assert stored[0].recorded_at == datetime(2026, 12, 1, 10, tzinfo=UTC)


async def test_the_background_writer_writes_within_its_interval_and_close_writes_the_rest(
    database: Database,
) -> None:
    ledger = UsageLedger(database, interval=0.05)
    await ledger.start()
    ledger.record(ROWS[0])

    async def count() -> int:
        return await database.read(lambda s: s.query(UsageRecord).count())

    await eventually_async(count, what="the row written by the background writer")
    ledger.record(ROWS[1])
    await ledger.close()
    assert await count() == 2


async def test_a_full_batch_is_written_without_waiting_for_the_interval(
    database: Database,
) -> None:
    ledger = UsageLedger(database, interval=3600, batch=2)
    await ledger.start()
    ledger.record(ROWS[0])
    ledger.record(ROWS[1])

    async def count() -> int:
        return await database.read(lambda s: s.query(UsageRecord).count())

    try:
        await eventually_async(count, what="the batch written", until=lambda n: n == 2)
    finally:
        await ledger.close()


async def test_totals_by_purpose_price_each_model_and_count_unpriced_requests(
    database: Database,
) -> None:
    report = await (await recorded(database)).report(Grouping.PURPOSE)

    assert report.currency == "USD"
    assert [g.group for g in report.groups] == ["extract", "review", "turn"]
    extract, review, turn = report.groups
    assert extract == UsageTotals("extract", 1, 500, 50, 0, 0, pytest.approx(EXTRACT_1), 0)  # type: ignore[arg-type]
    assert review == UsageTotals("review", 1, 2000, 100, 1000, 7, pytest.approx(REVIEW), 0)  # type: ignore[arg-type]
    assert turn == UsageTotals("turn", 2, 1300, 230, 400, 0, pytest.approx(TURN_1), 1)  # type: ignore[arg-type]
    assert report.total == UsageTotals(
        "",
        4,
        3800,
        380,
        1400,
        7,
        pytest.approx(TURN_1 + EXTRACT_1 + REVIEW),
        1,  # type: ignore[arg-type]
    )


async def test_totals_by_day_conversation_and_model(database: Database) -> None:
    reports = await recorded(database)

    by_day = await reports.report(Grouping.DAY)
    assert [(g.group, g.requests, g.unpriced_requests) for g in by_day.groups] == [
        ("2026-12-01", 2, 0),
        ("2026-12-02", 2, 1),
    ]
    assert by_day.groups[0].cost == pytest.approx(TURN_1 + EXTRACT_1)
    by_conversation = await reports.report(Grouping.CONVERSATION)
    assert [(g.group, g.input_tokens) for g in by_conversation.groups] == [
        ("", 2000),
        ("p_alice_1", 1500),
        ("p_bob_1", 300),
    ]
    by_model = await reports.report(Grouping.MODEL)
    assert [(g.group, g.requests, g.cost > 0) for g in by_model.groups] == [
        ("anthropic/claude-haiku-4-5", 1, True),
        ("openai/gpt-4o", 2, True),
        ("openai/local-model", 1, False),
    ]


async def test_since_and_one_conversation_narrow_the_rows(database: Database) -> None:
    reports = await recorded(database)

    since = await reports.report(Grouping.PURPOSE, since=datetime(2026, 12, 1, 10, 30, tzinfo=UTC))
    assert since.total.requests == 3
    assert since.total.input_tokens == 500 + 300 + 2000
    alice = await reports.report(Grouping.PURPOSE, conversation_key="p_alice_1")
    assert [(g.group, g.requests) for g in alice.groups] == [("extract", 1), ("turn", 1)]
    assert alice.total.cost == pytest.approx(TURN_1 + EXTRACT_1)
    assert (await reports.report(Grouping.DAY, conversation_key="p_nobody")).groups == []


async def test_a_report_flushes_the_ledger_first(database: Database) -> None:
    ledger = UsageLedger(database, interval=3600)
    reports = UsageReports(database, Pricing.of(), flush=ledger.flush)
    ledger.record(ROWS[0])

    assert (await reports.report(Grouping.PURPOSE)).total.requests == 1


def test_an_empty_ledger_reports_zero(database: Database) -> None:
    report = database.read_now(lambda s: usage_report(s, Pricing.of(), Grouping.DAY))
    assert report.groups == [] and report.total == UsageTotals()
