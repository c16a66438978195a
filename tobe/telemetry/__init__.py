"""Traces and metrics through OpenTelemetry, costing one flag check while nothing is on.

Code everywhere calls this facade: `span(...)` for a piece of work, `carrier()` and `resumed(...)`
to carry a trace across a process or a queue, `instruments` for metrics. Until
`tobe.telemetry.setup.configure` turns telemetry on (an exporter or a scrape port set), no
OpenTelemetry module is imported, a span is one shared no-op object and an instrument's record
is a `None` check: nothing set costs nothing measurable (`bench/bench_telemetry.py`).

Content (message text, tool arguments) goes into a span only through `content_allowed`, which
says yes only with `telemetry.content = true` and never for a sealed turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

AttributeValue = str | bool | int | float


class SpanLike(Protocol):
    """What callers do with a span: the OpenTelemetry span's methods they use."""

    def set_attribute(self, key: str, value: AttributeValue) -> Any: ...

    def add_event(
        self, name: str, attributes: Mapping[str, AttributeValue] | None = None
    ) -> Any: ...

    def record_exception(self, exception: BaseException) -> Any: ...


class _NoSpan:
    """The span handed out while tracing is off: every method does nothing."""

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        return None

    def add_event(self, name: str, attributes: Mapping[str, AttributeValue] | None = None) -> None:
        return None

    def record_exception(self, exception: BaseException) -> None:
        return None


class _NoSpanContext:
    """A reusable context manager yielding the no-op span (no generator frame per call)."""

    def __enter__(self) -> SpanLike:
        return NO_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


NO_SPAN: SpanLike = _NoSpan()
_NO_SPAN_CONTEXT = _NoSpanContext()


class _State:
    """What `setup.configure` switched on; read by the facade's functions."""

    tracer: Any = None  # an opentelemetry Tracer while tracing is on
    content: bool = False


state = _State()


def tracing() -> bool:
    return state.tracer is not None


def content_allowed(*, sealed: bool) -> bool:
    """Whether message text or tool arguments may go into a span of this turn."""
    return state.content and not sealed and state.tracer is not None


def span(
    name: str,
    *,
    kind: str = "internal",
    attributes: Mapping[str, AttributeValue] | None = None,
) -> contextlib.AbstractContextManager[SpanLike]:
    """A span around the `with` block, child of the current one; a no-op while tracing is off.

    `kind` is an OpenTelemetry span kind's name (`internal`, `server`, `client`, `producer`,
    `consumer`). An exception leaving the block is recorded and sets the span's status.
    """
    if state.tracer is None:
        return _NO_SPAN_CONTEXT
    from opentelemetry.trace import SpanKind

    return state.tracer.start_as_current_span(  # type: ignore[no-any-return]
        name, kind=SpanKind[kind.upper()], attributes=attributes
    )


def carrier() -> dict[str, str]:
    """The current trace context as W3C headers (`traceparent`, `tracestate`); empty when off."""
    if state.tracer is None:
        return {}
    from opentelemetry import propagate

    headers: dict[str, str] = {}
    propagate.inject(headers)
    return headers


@contextlib.contextmanager
def resumed(headers: Mapping[str, str]) -> Iterator[None]:
    """Inside the block, the trace context `headers` carry (from `carrier`) is the current one."""
    if state.tracer is None or not headers:
        yield
        return
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract(dict(headers)))
    try:
        yield
    finally:
        context.detach(token)
