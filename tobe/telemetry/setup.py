"""Turning telemetry on at a service's start, from OpenTelemetry's standard variables.

The `[telemetry]` keys of the configuration file are the variables' names without `OTEL_`, in
lower case; a variable already in the environment wins, the others are put into it, and the
SDK then reads every one of them itself (endpoint, protocol, headers, insecure, sampler,
batch delay, export interval, resource), as it documents. Only two choices are ToBe's:

- nothing is exported unless asked: traces (metrics) go out when `OTEL_TRACES_EXPORTER`
  (`OTEL_METRICS_EXPORTER`) names an exporter, or when an OTLP endpoint is set (then `otlp`);
  `OTEL_SDK_DISABLED=true` turns everything off;
- each service names itself (`tobe-mind`, `tobe-face`, `tobe-awareness`, `tobe-hand`) unless
  `OTEL_SERVICE_NAME` or a `service.name` resource attribute does.

The SDK is imported only here and only when something is on.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from tobe.config import TelemetrySettings
from tobe.telemetry import instruments, state

log = logging.getLogger(__name__)

# Each service's Prometheus port: `telemetry.prometheus_port` plus its offset, so that the
# four services `tobe up` starts on one machine never collide.
PROMETHEUS_OFFSETS = {"mind": 0, "face": 1, "awareness": 2, "hand": 3}
_NOT_VARIABLES = {"content", "prometheus_port", "prometheus_host"}


@dataclass(frozen=True)
class Plan:
    """What a service's telemetry does, decided from the environment and the file alone."""

    traces: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    prometheus: str = ""  # host:port, or "" when off
    endpoint: str = ""
    protocol: str = "grpc"
    content: bool = False
    service_name: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def on(self) -> bool:
        return bool(self.traces or self.metrics or self.prometheus)


def apply_file_keys(settings: TelemetrySettings, environ: dict[str, str] | None = None) -> None:
    """Put each `[telemetry]` key set in the file into the environment, unless already there."""
    target = os.environ if environ is None else environ
    for name in settings.model_fields_set - _NOT_VARIABLES:
        value = getattr(settings, name)
        if value is None or value == "":
            continue
        variable = f"OTEL_{name.upper()}"
        if variable not in target:
            target[variable] = str(value).lower() if isinstance(value, bool) else str(value)


def _exporters(signal: str, environ: dict[str, str] | os._Environ[str]) -> tuple[str, ...]:
    named = environ.get(f"OTEL_{signal}_EXPORTER", "").strip()
    if not named:
        endpoint = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get(
            f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"
        )
        return ("otlp",) if endpoint else ()
    return tuple(n.strip() for n in named.split(",") if n.strip() and n.strip() != "none")


def plan(settings: TelemetrySettings, service: str, environ: dict[str, str] | None = None) -> Plan:
    """What `configure` would switch on for `service` (also what `tobe doctor` shows)."""
    env = dict(os.environ if environ is None else environ)
    apply_file_keys(settings, env)
    prometheus = ""
    if settings.prometheus_port:
        port = settings.prometheus_port + PROMETHEUS_OFFSETS.get(service, 0)
        prometheus = f"{settings.prometheus_host}:{port}"
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return Plan(prometheus=prometheus, content=settings.content)
    attributes = env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    named = env.get("OTEL_SERVICE_NAME") or _attribute(attributes, "service.name")
    return Plan(
        traces=_exporters("TRACES", env),
        metrics=_exporters("METRICS", env),
        prometheus=prometheus,
        endpoint=env.get("OTEL_EXPORTER_OTLP_ENDPOINT", ""),
        protocol=env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "") or "grpc",
        content=settings.content,
        service_name=named or f"tobe-{service}",
    )


def _attribute(attributes: str, key: str) -> str:
    for pair in attributes.split(","):
        name, _, value = pair.partition("=")
        if name.strip() == key:
            return value.strip()
    return ""


def configure(settings: TelemetrySettings, service: str) -> Plan:
    """Switch on what the plan says for `service`; nothing is imported when nothing is on."""
    apply_file_keys(settings)
    decided = plan(settings, service)
    if not decided.on:
        return decided
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create({"service.name": decided.service_name})
    if decided.traces:
        _start_tracing(decided, resource)
    if decided.metrics or decided.prometheus:
        _start_metrics(decided, resource)
    state.content = decided.content
    log.info(
        "telemetry on: traces %s, metrics %s, prometheus %s",
        ",".join(decided.traces) or "off",
        ",".join(decided.metrics) or "off",
        decided.prometheus or "off",
    )
    return decided


def _exporter(group: str, name: str, protocol: str) -> Any:
    """The exporter class an SDK entry point names; `otlp` follows the OTLP protocol."""
    if name == "otlp":
        name = "otlp_proto_http" if protocol == "http/protobuf" else "otlp_proto_grpc"
    found = entry_points(group=group, name=name)
    if not found:
        raise ValueError(f"no OpenTelemetry exporter named {name!r} is installed ({group})")
    return next(iter(found)).load()


def _start_tracing(decided: Plan, resource: Any) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=resource)  # reads the sampler variables
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", decided.protocol)
    for name in decided.traces:
        exporter = _exporter("opentelemetry_traces_exporter", name, protocol)
        provider.add_span_processor(BatchSpanProcessor(exporter()))
    trace.set_tracer_provider(provider)
    state.tracer = trace.get_tracer("tobe")


def _start_metrics(decided: Plan, resource: Any) -> None:
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader

    readers: list[MetricReader] = []
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", decided.protocol)
    for name in decided.metrics:
        if name == "prometheus":
            continue  # the scrape endpoint is `telemetry.prometheus_port`'s
        exporter = _exporter("opentelemetry_metrics_exporter", name, protocol)
        readers.append(PeriodicExportingMetricReader(exporter()))  # reads the interval
    if decided.prometheus:
        readers.append(_prometheus_reader(decided.prometheus))
    provider = MeterProvider(resource=resource, metric_readers=readers)
    metrics.set_meter_provider(provider)
    instruments.bind(metrics.get_meter("tobe"))


def _prometheus_reader(address: str) -> Any:
    """The OpenTelemetry Prometheus reader, served by prometheus_client's HTTP server."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import start_http_server

    host, _, port = address.rpartition(":")
    reader = PrometheusMetricReader()
    start_http_server(int(port), addr=host)
    return reader


def describe(decided: Plan) -> str:
    """One line for `tobe doctor`: whether telemetry is on and where it goes."""
    if not decided.on:
        return "off (no OTEL_* exporter or endpoint, no telemetry.prometheus_port)"
    parts = []
    where = decided.endpoint or "the exporter's default endpoint"
    if decided.traces:
        parts.append(f"traces {','.join(decided.traces)} ({decided.protocol}) to {where}")
    if decided.metrics:
        parts.append(f"metrics {','.join(decided.metrics)} ({decided.protocol}) to {where}")
    if decided.prometheus:
        parts.append(f"Prometheus /metrics from port {decided.prometheus.rpartition(':')[2]}")
    if decided.content:
        parts.append("with message content")
    return "; ".join(parts)
