"""Whether telemetry is on and where it goes: OpenTelemetry's exporters and endpoint (from the
OTEL_* variables or `[telemetry]`), and each service's Prometheus port.

Off is fine (nothing is exported unless asked). An exporter named that is not installed is a
failure: the services would refuse to start with it.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.telemetry.setup import PROMETHEUS_OFFSETS, describe, plan

CHECK = "telemetry"
_GROUPS = {"traces": "opentelemetry_traces_exporter", "metrics": "opentelemetry_metrics_exporter"}
_OURS = {"otlp", "prometheus"}


def check_telemetry(doctor: Doctor) -> list[Finding]:
    settings = doctor.settings
    if settings is None:
        return [Finding(Status.SKIP, CHECK, "the configuration does not load")]
    decided = plan(settings.telemetry, "mind")
    for signal, names in (("traces", decided.traces), ("metrics", decided.metrics)):
        for name in names:
            if name not in _OURS and not entry_points(group=_GROUPS[signal], name=name):
                return [
                    Finding(
                        Status.FAIL,
                        CHECK,
                        f"no OpenTelemetry {signal} exporter named {name!r} is installed",
                        f"set OTEL_{signal.upper()}_EXPORTER to otlp, console or none",
                    )
                ]
    text = describe(decided)
    if decided.prometheus:
        base = settings.telemetry.prometheus_port
        ports = ", ".join(f"{name} {base + offset}" for name, offset in PROMETHEUS_OFFSETS.items())
        text += f" ({ports})"
    return [Finding(Status.OK, CHECK, text)]
