"""What a model request shows in its span and the metrics: tokens, time to first token, the
kind of error. Counts and names only, never content."""

from __future__ import annotations

import time

from mind.providers.base import EventSink, ProviderResult, StreamEvent
from tobe import telemetry
from tobe.telemetry import instruments


class FirstToken:
    """Passes a request's stream events on and notes when the first one arrived."""

    def __init__(self, on_event: EventSink) -> None:
        self._on_event = on_event
        self.started = time.monotonic()
        self.first: float | None = None

    def sink(self, event: StreamEvent) -> None:
        if self.first is None:
            self.first = time.monotonic() - self.started
        self._on_event(event)


def observe(
    span: telemetry.SpanLike, provider: str, model: str, result: ProviderResult, timing: FirstToken
) -> None:
    usage = result.usage
    model = model or result.model
    span.set_attribute("gen_ai.response.model", result.model or model)
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    span.set_attribute("gen_ai.response.finish_reasons", str(result.stop_reason.value))
    labels = {"gen_ai.provider.name": provider, "gen_ai.request.model": model}
    if timing.first is not None:
        span.set_attribute("tobe.time_to_first_token", timing.first)
        instruments.time_to_first_token.record(timing.first, labels)
    for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
        typed = {**labels, "gen_ai.token.type": kind}
        instruments.tokens.add(count, typed)
        instruments.token_usage.record(count, typed)
    if result.error is not None:
        kind = result.error.kind.value
        span.set_attribute("error.type", kind)
        instruments.provider_errors.add(1, {**labels, "error.type": kind})
