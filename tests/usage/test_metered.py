"""The metered provider: one row per request, attributed by the context it was made in."""

from __future__ import annotations

import asyncio

import pytest

from mind.providers.base import (
    EventSink,
    ProviderMessage,
    ProviderRequest,
    ProviderResult,
    Usage,
)
from mind.usage import attribution
from mind.usage.ledger import UsageRow
from mind.usage.metered import MeteredProvider

REQUEST = ProviderRequest(system="", messages=[ProviderMessage("user", "hi")])


class CountingProvider:
    """Answers every request with the same usage; `gate` holds an answer back when set."""

    name = "openai"
    model = "gpt-4o"
    info = "the catalog entry"

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None

    async def complete(self, request: ProviderRequest, on_event: EventSink) -> ProviderResult:
        if self.gate is not None:
            await self.gate.wait()
        return ProviderResult(text="ok", usage=Usage(100, 20, 40, 5))

    async def aclose(self) -> None:
        return None


@pytest.fixture
def rows() -> list[UsageRow]:
    return []


@pytest.fixture
def metered(rows: list[UsageRow]) -> MeteredProvider:
    return MeteredProvider(CountingProvider(), rows.append)


async def test_a_request_in_a_run_is_recorded_with_its_conversation_owner_and_tokens(
    metered: MeteredProvider, rows: list[UsageRow]
) -> None:
    with attribution.attributed("p_alice_1", run_id="run_1", principal="alice"):
        await metered.complete(REQUEST, lambda e: None)

    (row,) = rows
    assert (row.conversation_key, row.run_id, row.principal) == ("p_alice_1", "run_1", "alice")
    assert (row.provider, row.model, row.purpose) == ("openai", "gpt-4o", attribution.TURN)
    assert (row.input_tokens, row.output_tokens, row.cached_tokens, row.reasoning_tokens) == (
        100,
        20,
        40,
        5,
    )


async def test_a_purpose_inside_a_run_keeps_the_run_and_ends_with_its_block(
    metered: MeteredProvider, rows: list[UsageRow]
) -> None:
    with attribution.attributed("p_alice_1", run_id="run_1", principal="alice"):
        with attribution.purpose(attribution.EXTRACT):
            await metered.complete(REQUEST, lambda e: None)
        await metered.complete(REQUEST, lambda e: None)
    await metered.complete(REQUEST, lambda e: None)

    assert [(row.conversation_key, row.run_id, row.purpose) for row in rows] == [
        ("p_alice_1", "run_1", attribution.EXTRACT),
        ("p_alice_1", "run_1", attribution.TURN),
        ("", "", attribution.OTHER),
    ]


async def test_tasks_started_inside_an_attribution_carry_it(
    metered: MeteredProvider, rows: list[UsageRow]
) -> None:
    with attribution.attributed("g_team", run_id="run_2", principal="bob"):
        with attribution.purpose(attribution.REVIEW):
            await asyncio.wait_for(metered.complete(REQUEST, lambda e: None), 5)
    other = asyncio.create_task(metered.complete(REQUEST, lambda e: None))
    await other

    assert [(row.conversation_key, row.purpose) for row in rows] == [
        ("g_team", attribution.REVIEW),
        ("", attribution.OTHER),
    ]


async def test_a_cancelled_request_leaves_no_row(
    metered: MeteredProvider, rows: list[UsageRow]
) -> None:
    inner = metered.inner
    assert isinstance(inner, CountingProvider)
    inner.gate = asyncio.Event()
    task = asyncio.create_task(metered.complete(REQUEST, lambda e: None))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert rows == []


def test_the_wrapped_providers_attributes_show_through(metered: MeteredProvider) -> None:
    assert metered.info == "the catalog entry"
    assert (metered.name, metered.model) == ("openai", "gpt-4o")
