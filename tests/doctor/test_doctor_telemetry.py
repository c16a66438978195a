"""`tobe doctor` says whether telemetry is on and where it goes, and fails on an exporter that
is not installed."""

from __future__ import annotations

import os
from pathlib import Path

from doctor_run import doctor_env, run_doctor

from mind.management import provision
from tobe.config import Settings


def _env(tmp_path: Path, **variables: str) -> dict[str, str | None]:
    data_dir = tmp_path / "data"
    provision(Settings(data_dir=data_dir, database_url=""))
    env = doctor_env(data_dir, tmp_path / "none.toml", TOBE_DATABASE_URL="", **variables)
    env.update({name: None for name in os.environ if name.startswith("OTEL_")})
    env.update({k: v for k, v in variables.items() if k.startswith("OTEL_")})
    return env


def test_doctor_says_telemetry_is_off_or_where_it_goes(tmp_path: Path) -> None:
    [off] = run_doctor(_env(tmp_path / "a"))[1]["telemetry"]
    assert off.startswith("ok off ")

    env = _env(
        tmp_path / "b",
        OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4317",
        TOBE_TELEMETRY__PROMETHEUS_PORT="9464",
    )
    [on] = run_doctor(env)[1]["telemetry"]
    assert "traces otlp (grpc) to http://collector:4317" in on
    assert "metrics otlp (grpc) to http://collector:4317" in on
    assert "(mind 9464, face 9465, awareness 9466, hand 9467)" in on


def test_an_exporter_not_installed_fails_naming_it(tmp_path: Path) -> None:
    status, findings = run_doctor(_env(tmp_path, OTEL_TRACES_EXPORTER="zipkin_json"))
    [line] = findings["telemetry"]
    assert line.startswith("FAIL no OpenTelemetry traces exporter named 'zipkin_json'")
    assert status == 1
