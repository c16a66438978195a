"""Telemetry's setup: nothing set switches nothing on (and loads no OpenTelemetry module);
the `[telemetry]` keys are the standard variables, which win; content never enters a sealed
turn's spans; JSON log lines carry the current trace and span ids."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from mind.core.tool_runtime import _call_attributes
from mind.providers.base import ToolCall
from tobe import telemetry
from tobe.config import TelemetrySettings
from tobe.runtime.json_logs import JsonFormatter
from tobe.telemetry.setup import describe, plan

NOTHING_SET = """
import sys
from tobe.config import TelemetrySettings
from tobe.telemetry import setup, span, carrier, instruments
decided = setup.configure(TelemetrySettings(), "mind")
with span("turn") as s:
    s.set_attribute("a", 1)
instruments.turns_started.add(1)
loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
print(decided.on, carrier(), loaded)
"""


def test_with_nothing_set_nothing_is_on_and_no_opentelemetry_module_is_loaded() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOBE_"))}
    env["TOBE_CONFIG"] = "/nonexistent/config.toml"
    done = subprocess.run(
        [sys.executable, "-c", NOTHING_SET], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False {} []"


def test_file_keys_are_the_standard_variables_and_a_variable_set_wins() -> None:
    settings = TelemetrySettings(
        exporter_otlp_endpoint="http://collector:4317", exporter_otlp_protocol="grpc"
    )
    decided = plan(settings, "face", {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    assert decided.traces == ("otlp",) and decided.metrics == ("otlp",)
    assert decided.endpoint == "http://collector:4317"
    assert decided.protocol == "http/protobuf"
    assert decided.service_name == "tobe-face"
    named = plan(settings, "face", {"OTEL_RESOURCE_ATTRIBUTES": "service.name=edge,x=1"})
    assert named.service_name == "edge"
    only_metrics = plan(settings, "mind", {"OTEL_TRACES_EXPORTER": "none"})
    assert only_metrics.traces == () and only_metrics.metrics == ("otlp",)
    disabled = plan(settings, "mind", {"OTEL_SDK_DISABLED": "true"})
    assert not disabled.on and describe(disabled).startswith("off")


def test_each_service_scrapes_on_the_base_port_plus_its_offset() -> None:
    settings = TelemetrySettings(prometheus_port=9464)
    ports = [plan(settings, s, {}).prometheus for s in ("mind", "face", "awareness", "hand")]
    assert ports == [f"127.0.0.1:{9464 + i}" for i in range(4)]
    assert plan(TelemetrySettings(), "mind", {}).prometheus == ""


@pytest.fixture
def tracing() -> Iterator[Any]:
    provider = TracerProvider()
    telemetry.state.tracer, telemetry.state.content = provider.get_tracer("test"), True
    try:
        yield provider
    finally:
        telemetry.state.tracer, telemetry.state.content = None, False


def test_tool_arguments_enter_a_span_only_with_content_on_and_never_in_a_sealed_run(
    tracing: Any,
) -> None:
    call = ToolCall(id="c1", name="local__read", arguments={"path": "secret.txt"})
    open_run = SimpleNamespace(run_id="r1", sensitive={})
    sealed_run = SimpleNamespace(run_id="r2", sensitive={"vault__read": "passwords"})
    assert "secret.txt" in str(_call_attributes(call, open_run))  # type: ignore[arg-type]
    sealed = _call_attributes(call, sealed_run)  # type: ignore[arg-type]
    assert "gen_ai.tool.call.arguments" not in sealed
    assert "secret.txt" not in json.dumps(sealed)
    telemetry.state.content = False
    assert "gen_ai.tool.call.arguments" not in _call_attributes(call, open_run)  # type: ignore[arg-type]


def test_a_json_log_line_carries_the_current_trace_and_span_ids(tracing: Any) -> None:
    formatter = JsonFormatter("mind")
    record = logging.LogRecord("mind.x", logging.INFO, __file__, 1, "run %s", ("r1",), None)
    with telemetry.span("turn"):
        line = json.loads(formatter.format(record))
        headers = telemetry.carrier()
    assert line["message"] == "run r1" and line["process"] == "mind"
    trace_id, span_id = headers["traceparent"].split("-")[1:3]
    assert (line["trace_id"], line["span_id"]) == (trace_id, span_id)
    outside = json.loads(formatter.format(record))
    assert "trace_id" not in outside
