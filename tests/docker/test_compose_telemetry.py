"""docker/compose.telemetry.yaml: valid Compose on top of docker/compose.yaml, the four ToBe
services pointed at the Collector, and a Grafana dashboard that plots only metrics ToBe
records."""

from __future__ import annotations

import json
import re

import jsonschema
from compose_render import render
from compose_topology import COMPOSE_FILE, COMPOSE_SCHEMA, ENV_EXAMPLE, REPO, read_env_file

from tobe.telemetry import instruments

TELEMETRY_FILE = REPO / "docker" / "compose.telemetry.yaml"
DASHBOARD = REPO / "docker" / "telemetry" / "grafana" / "dashboards" / "tobe.json"
_SUFFIXES = ("_total", "_bucket", "_seconds", "_count", "_sum")


def test_the_overlay_is_valid_compose_and_sends_every_service_to_the_collector() -> None:
    compose = render([COMPOSE_FILE, TELEMETRY_FILE], read_env_file(ENV_EXAMPLE))
    jsonschema.validate(compose, json.loads(COMPOSE_SCHEMA.read_text()))
    for service in ("mind", "face", "awareness", "hand"):
        environment = compose["services"][service]["environment"]
        assert environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4317"
    for backend in ("otel-collector", "jaeger", "prometheus", "grafana"):
        assert compose["services"][backend]["profiles"] == ["telemetry"]


def _prometheus_name(name: str) -> str:
    return name.replace(".", "_")


def test_the_dashboard_plots_only_metrics_tobe_records_and_every_one_of_them() -> None:
    exprs = [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]
    known = {_prometheus_name(i.name) for i in instruments.ALL}
    plotted = set()
    for expr in exprs:
        series = re.sub(r"by \([^)]*\)", "", expr)  # label names are no metrics
        for metric in re.findall(r"\b((?:tobe|gen_ai)_[a-z_]+)", series):
            base = metric
            while base not in known and base.endswith(_SUFFIXES):
                base = next(base.removesuffix(s) for s in _SUFFIXES if base.endswith(s))
            assert base in known, f"{metric} is no metric ToBe records"
            plotted.add(base)
    # Only the Hand's own task count and the per-request token histogram are left to Jaeger
    # and ad-hoc queries.
    assert known - plotted == {"tobe_hand_tasks", "gen_ai_client_token_usage"}
