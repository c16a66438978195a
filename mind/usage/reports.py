"""Usage totals by day, conversation, model or purpose, with an estimated cost.

Rows are summed in the database per group, provider and model; each of those sums is priced
(`mind.providers.prices`) and folded into its group. A group whose requests include a model
with no known price counts them in `unpriced_requests`: its cost covers the priced ones only.
Days are UTC days.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mind.providers.prices import CURRENCY, Pricing
from mind.store.database import Database
from mind.store.engine import is_sqlite_dialect
from mind.store.models import UsageRecord


class Grouping(StrEnum):
    DAY = "day"
    CONVERSATION = "conversation"
    MODEL = "model"
    PURPOSE = "purpose"


@dataclass(frozen=True)
class UsageTotals:
    # The day (YYYY-MM-DD), conversation key, `provider/model` or purpose; "" for a total.
    group: str = ""
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    # Estimated, in `UsageReport.currency`, of the priced requests.
    cost: float = 0.0
    # Requests whose model has no known price (their tokens are not in `cost`).
    unpriced_requests: int = 0

    def plus(self, other: UsageTotals) -> UsageTotals:
        return replace(
            self,
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost=self.cost + other.cost,
            unpriced_requests=self.unpriced_requests + other.unpriced_requests,
        )


@dataclass(frozen=True)
class UsageReport:
    groups: list[UsageTotals]
    total: UsageTotals
    currency: str = CURRENCY


def _group_column(session: Session, by: Grouping) -> Any:
    table = UsageRecord.__table__.c
    if by == Grouping.CONVERSATION:
        return table.conversation_key
    if by == Grouping.PURPOSE:
        return table.purpose
    if by == Grouping.MODEL:
        return table.provider + "/" + table.model
    if is_sqlite_dialect(session.get_bind().dialect):
        # UTCDateTime stores UTC wall-clock digits on SQLite.
        return func.strftime("%Y-%m-%d", table.recorded_at)
    return func.to_char(func.timezone("UTC", table.recorded_at), "YYYY-MM-DD")


def usage_report(
    session: Session,
    pricing: Pricing,
    by: Grouping,
    *,
    since: datetime | None = None,
    conversation_key: str | None = None,
) -> UsageReport:
    """The totals of the rows recorded at or after `since` (of one conversation when given),
    by `by`, sorted by group."""
    table = UsageRecord.__table__.c
    group = _group_column(session, by).label("group")
    statement = select(
        group,
        table.provider,
        table.model,
        func.count(),
        func.sum(table.input_tokens),
        func.sum(table.output_tokens),
        func.sum(table.cached_tokens),
        func.sum(table.reasoning_tokens),
    ).group_by(group, table.provider, table.model)
    if since is not None:
        statement = statement.where(table.recorded_at >= since)
    if conversation_key is not None:
        statement = statement.where(table.conversation_key == conversation_key)
    groups: dict[str, UsageTotals] = {}
    for label, provider, model, count, inputs, outputs, cached, reasoning in session.execute(
        statement
    ):
        price = pricing.price(provider, model)
        part = UsageTotals(
            group=label,
            requests=count,
            input_tokens=int(inputs or 0),
            output_tokens=int(outputs or 0),
            cached_tokens=int(cached or 0),
            reasoning_tokens=int(reasoning or 0),
        )
        if price is None:
            part = replace(part, unpriced_requests=count)
        else:
            cost = price.cost(part.input_tokens, part.output_tokens, part.cached_tokens)
            part = replace(part, cost=cost)
        groups[label] = groups[label].plus(part) if label in groups else part
    ordered = [groups[label] for label in sorted(groups)]
    total = UsageTotals()
    for totals in ordered:
        total = total.plus(totals)
    return UsageReport(ordered, total)


class UsageReports:
    """Reports for the servicers; `flush` (the running Mind's ledger) runs first, so a report
    counts every request made before it was asked for."""

    def __init__(
        self,
        database: Database,
        pricing: Pricing,
        flush: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._database = database
        self._pricing = pricing
        self._flush = flush

    async def report(
        self, by: Grouping, *, since: datetime | None = None, conversation_key: str | None = None
    ) -> UsageReport:
        if self._flush is not None:
            await self._flush()
        return await self._database.read(
            lambda session: usage_report(
                session, self._pricing, by, since=since, conversation_key=conversation_key
            )
        )
