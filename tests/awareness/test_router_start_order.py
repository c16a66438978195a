"""The Awareness router expects Awareness to start after the Mind: a refused link during the
start-up window is logged at INFO; after the window, or once the stream has delivered, losing
it is a WARNING."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from helpers.eventually import eventually_async

from mind.awareness.errors import AwarenessLinkError
from mind.awareness.notes import ObservationNote
from mind.awareness.router import ObservationRouter
from mind.store.database import Database
from tobe.v1 import awareness_pb2 as pb

LOGGER = "mind.awareness.router"


class Sink:
    async def deliver(self, note: ObservationNote) -> str:
        return "p_routed"


class Awareness:
    """Stands for the link: delivers `batches`, then refuses as a stopped Awareness does."""

    def __init__(self, batches: list[pb.SubscribeObservationsResponse]) -> None:
        self.batches = batches

    async def subscribe(self, after_seq: int) -> AsyncIterator[pb.SubscribeObservationsResponse]:
        for batch in self.batches:
            yield batch
        self.batches = []
        raise AwarenessLinkError("UNAVAILABLE", "failed to connect")


async def first_stream_record(
    database: Database,
    caplog: pytest.LogCaptureFixture,
    *,
    batches: list[pb.SubscribeObservationsResponse],
    start_window: float,
) -> logging.LogRecord:
    """Run the router until it logs its first line about the stream; that line."""
    router = ObservationRouter(
        Awareness(batches),  # type: ignore[arg-type]  # only subscribe() is called
        database,
        Sink(),
        default_conversation="p_default",
        start_window=start_window,
    )
    caplog.set_level(logging.INFO, logger=LOGGER)

    def stream_records() -> list[logging.LogRecord]:
        return [
            r for r in caplog.records if r.name == LOGGER and "observation stream" in r.getMessage()
        ]

    task = asyncio.create_task(router.run())
    try:
        found = await eventually_async(stream_records, what="a line about the stream")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return found[0]


async def test_awareness_not_up_yet_during_the_start_window_is_logged_at_info(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    record = await first_stream_record(database, caplog, batches=[], start_window=60.0)
    assert record.levelno == logging.INFO
    assert "UNAVAILABLE" in record.getMessage() and "not up yet" in record.getMessage()


async def test_awareness_still_unreachable_after_the_start_window_is_a_warning(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    record = await first_stream_record(database, caplog, batches=[], start_window=0.0)
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "Awareness observation stream: UNAVAILABLE"


async def test_losing_a_stream_that_delivered_is_a_warning_even_in_the_start_window(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    batch = pb.SubscribeObservationsResponse(publish_seq=1, observations=[pb.Observation(id="o1")])
    record = await first_stream_record(database, caplog, batches=[batch], start_window=60.0)
    assert record.levelno == logging.WARNING
    assert "UNAVAILABLE" in record.getMessage()
