"""Loaded by the benchmark's "bare" Mind only (this directory on its PYTHONPATH): replaces the
telemetry facade by bare no-ops, so that `bench_telemetry.py` measures, beside the shipped
facade with nothing set, what ToBe would cost with no telemetry call sites at all.

Call sites read the facade's functions as module attributes (`telemetry.span(...)`) and the
instruments' methods through their class, so patching both here reaches every site.
"""

from __future__ import annotations

import contextlib
from typing import Any

from tobe import telemetry
from tobe.telemetry import instruments

_NULL = contextlib.nullcontext(telemetry.NO_SPAN)


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


telemetry.span = lambda *args, **kwargs: _NULL  # type: ignore[assignment]
telemetry.carrier = dict  # type: ignore[assignment]
telemetry.resumed = lambda headers: _NULL  # type: ignore[assignment]
telemetry.tracing = lambda: False  # type: ignore[assignment]
telemetry.content_allowed = lambda *, sealed: False  # type: ignore[assignment]
instruments.Instrument.add = _nothing  # type: ignore[method-assign]
instruments.Instrument.record = _nothing  # type: ignore[method-assign]
print("telemetry: bare no-ops", flush=True)
