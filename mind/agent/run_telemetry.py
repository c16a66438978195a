"""A run's span and its metrics: started, finished by state, failed, and how long it took."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from mind.events.views import RunState
from tobe import telemetry
from tobe.telemetry import instruments


@dataclass
class RunSpan:
    span: telemetry.SpanLike
    started: float
    trigger: str

    def ended(self, state: RunState) -> None:
        """Record the run's end state on its span and in the turn metrics."""
        labels = {"state": state.value, "trigger": self.trigger}
        self.span.set_attribute("tobe.run.state", state.value)
        instruments.turns_finished.add(1, labels)
        if state is RunState.FAILED:
            instruments.turns_failed.add(1, {"trigger": self.trigger})
        instruments.turn_duration.record(time.monotonic() - self.started, labels)


@contextmanager
def run_span(conversation_key: str, run_id: str, trigger: str) -> Iterator[RunSpan]:
    """The span of one run (a turn), child of the call that started it when it has one."""
    attributes: dict[str, telemetry.AttributeValue] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.conversation.id": conversation_key,
        "tobe.run.id": run_id,
        "tobe.run.trigger": trigger,
    }
    instruments.turns_started.add(1, {"trigger": trigger})
    with telemetry.span("turn", attributes=attributes) as span:
        yield RunSpan(span, time.monotonic(), trigger)
