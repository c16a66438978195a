"""Awareness's telemetry, through a real Awareness process exporting to an OTLP receiver
served in the test: an adapter's emission is a span, each published batch carries that span's
trace context to its subscribers (aggregated batches too), and observations are counted by
adapter and trust."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from awareness_harness import AwarenessProcess, Client, batch_with, new_process
from helpers import otlp_receiver
from helpers.eventually import eventually_async
from helpers.otlp_receiver import Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from otlp_receiver.serving()


@pytest.fixture
def traced(receiver: Receiver) -> Iterator[AwarenessProcess]:
    with new_process() as process:
        process.extra_env.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_EXPORTER_OTLP_INSECURE="true",
            OTEL_BSP_SCHEDULE_DELAY="100",
            OTEL_METRIC_EXPORT_INTERVAL="300",
        )
        process.start()
        yield process


async def test_a_published_batch_carries_the_trace_of_the_emission_that_published_it(
    traced: AwarenessProcess, receiver: Receiver
) -> None:
    client = Client(traced.target)
    try:
        probe = await client.adapter_id("probe")
        stream = client.subscribe()
        high = await batch_with(stream, await client.emit(probe, "high", text="door opened"))
        low = await batch_with(stream, await client.emit(probe, "low", n=1))
        stream.cancel()
    finally:
        await client.close()
    for batch in (high, low):
        observation = batch.observations[0]
        _, trace_id, span_id, _ = batch.trace_context["traceparent"].split("-")
        spans = await eventually_async(
            lambda trace_id=trace_id, span_id=span_id: [
                s
                for s in receiver.received.spans()
                if s.trace_id == trace_id and s.span_id == span_id
            ],
            what="the emission's span",
        )
        emission = spans[0]
        assert emission.service == "tobe-awareness"
        assert emission.span.name == "observe probe"
        assert emission.attributes["tobe.observation.id"] == observation.id
        assert emission.attributes["tobe.trust"] in {"high", "low"}
    names = await eventually_async(
        receiver.received.metric_names,
        what="the observation counter over OTLP",
        until=lambda got: "tobe.awareness.observations" in got.get("tobe-awareness", set()),
    )
    assert names
