"""Every metric ToBe records, declared once; each records nothing until metrics are on.

An instrument here is a placeholder that `bind` replaces with the SDK's own when
`tobe.telemetry.setup.configure` turns metrics on; until then `add`/`record` is one `None`
check. Names follow OpenTelemetry's semantic conventions where one exists
(`gen_ai.client.token.usage`, `gen_ai.server.time_to_first_token`), and `tobe.*` otherwise;
the Prometheus endpoint shows them with dots as underscores and the unit appended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tobe.telemetry import AttributeValue

Attributes = Mapping[str, AttributeValue] | None


@dataclass
class Instrument:
    """One metric: `kind` is `counter`, `updown` (goes both ways) or `histogram`."""

    name: str
    kind: str
    unit: str
    description: str
    real: Any = None

    def add(self, value: float, attributes: Attributes = None) -> None:
        if self.real is not None:
            self.real.add(value, attributes)

    def record(self, value: float, attributes: Attributes = None) -> None:
        if self.real is not None:
            self.real.record(value, attributes)


def _counter(name: str, unit: str, description: str) -> Instrument:
    return Instrument(name, "counter", unit, description)


def _updown(name: str, unit: str, description: str) -> Instrument:
    return Instrument(name, "updown", unit, description)


def _histogram(name: str, unit: str, description: str) -> Instrument:
    return Instrument(name, "histogram", unit, description)


# The Mind's.
turns_started = _counter("tobe.turns.started", "{turn}", "Runs started")
turns_finished = _counter("tobe.turns.finished", "{turn}", "Runs ended, by state")
turns_failed = _counter("tobe.turns.failed", "{turn}", "Runs ended failed")
turn_duration = _histogram("tobe.turn.duration", "s", "From a run's start to its end")
time_to_first_token = _histogram(
    "gen_ai.server.time_to_first_token", "s", "From a model request to its first streamed part"
)
provider_errors = _counter("tobe.provider.errors", "{error}", "Model requests ended in an error")
tokens = _counter("tobe.tokens", "{token}", "Tokens of model requests, by model and type")
token_usage = _histogram("gen_ai.client.token.usage", "{token}", "Tokens per model request")
tool_calls = _counter("tobe.tool.calls", "{call}", "Tool calls ended, by tool and outcome")
approvals_waiting = _updown("tobe.approvals.waiting", "{approval}", "Approvals waiting")
hands_attached = _updown("tobe.hands.attached", "{hand}", "Hands attached to this Mind")
scheduler_lag = _histogram("tobe.scheduler.lag", "s", "From a firing's due time to its claim")
store_transaction = _histogram(
    "tobe.store.transaction.duration", "s", "A unit of work, from submission to its commit"
)

# The Face's.
face_connections = _updown("tobe.face.connections", "{connection}", "Client connections open")
face_queue_depth = _histogram(
    "tobe.face.queue.depth", "{event}", "Events waiting in a connection's queue when one is added"
)
face_drops = _counter("tobe.face.drops", "{event}", "Ephemeral events dropped for slow clients")
face_resyncs = _counter("tobe.face.resyncs", "{connection}", "Clients told to resync")
face_resumes = _counter("tobe.face.resumes", "{connection}", "Connections resumed after a gap")

# Awareness's.
awareness_observations = _counter(
    "tobe.awareness.observations", "{observation}", "Observations adapters emitted, by trust"
)

# The Hand's.
hand_tasks = _counter("tobe.hand.tasks", "{task}", "Tasks this Hand ran, by tool and outcome")

ALL: tuple[Instrument, ...] = tuple(
    value for value in list(globals().values()) if isinstance(value, Instrument)
)


def bind(meter: Any) -> None:
    """Replace every placeholder with the SDK's instrument of `meter`."""
    makers = {
        "counter": meter.create_counter,
        "updown": meter.create_up_down_counter,
        "histogram": meter.create_histogram,
    }
    for instrument in ALL:
        instrument.real = makers[instrument.kind](
            instrument.name, unit=instrument.unit, description=instrument.description
        )


def unbind() -> None:
    for instrument in ALL:
        instrument.real = None
