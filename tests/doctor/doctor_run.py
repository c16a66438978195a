"""`tobe doctor` run in this process (click's runner) on one data directory, and its lines."""

from __future__ import annotations

import os
import re
from pathlib import Path

from click.testing import CliRunner
from helpers import store_backend
from helpers.ports import free_port
from helpers.up_process import PROVIDER_VARIABLES

from tobe.cli import main
from tobe.config import Settings

_LINE = re.compile(r"^(ok|warn|FAIL|fixed|skip)\s+(\S+(?: \S+)?)\s{2,}(.*)$")


def store_settings(data_dir: Path) -> Settings:
    """The settings of a ToBe on `data_dir` and the test's store (`--store-backend`), to
    provision it as `tobe up` does."""
    url = store_backend.environment(data_dir)["TOBE_DATABASE_URL"]
    return Settings(data_dir=data_dir, database_url=url)


def doctor_env(data_dir: Path, config: Path, **settings: str) -> dict[str, str | None]:
    """No `TOBE_*` or provider key of the test run but the test's store (`--store-backend`);
    free ports for every service."""
    env: dict[str, str | None] = {
        name: None for name in os.environ if name.startswith("TOBE_") or name in PROVIDER_VARIABLES
    }
    env.update(
        TOBE_DATA_DIR=str(data_dir),
        TOBE_CONFIG=str(config),
        TOBE_MIND__LISTEN=f"127.0.0.1:{free_port()}",
        TOBE_FACE__LISTEN=f"127.0.0.1:{free_port()}",
        TOBE_FACE__WEB__LISTEN=f"127.0.0.1:{free_port()}",
        TOBE_AWARENESS__LISTEN=f"127.0.0.1:{free_port()}",
        **store_backend.environment(data_dir),
    )
    env.update(settings)
    return env


def run_doctor(
    env: dict[str, str | None], *args: str, every_finding: bool = False
) -> tuple[int, dict[str, list[str]]]:
    """The exit status, and each check's lines as `status text` (status first).

    The test PostgreSQL server runs with fsync off (scripts/start_test_postgres.sh), which
    `pg fsync` rightly fails: unless `every_finding` (test_doctor_postgresql.py checks that
    line), it is set aside, and the status is the one the other findings give (doctor exits 1
    on any FAIL, which is checked first)."""
    result = CliRunner().invoke(main, ["doctor", *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    findings: dict[str, list[str]] = {}
    for line in result.output.splitlines():
        match = _LINE.match(line)
        assert match, f"not a finding line: {line!r}"
        findings.setdefault(match.group(2), []).append(f"{match.group(1)} {match.group(3)}")
    assert result.exit_code == int(_fails(findings)), result.output
    if every_finding:
        return result.exit_code, findings
    fsync = findings.get("pg fsync", [])
    if fsync and fsync[0].startswith(_FSYNC_OFF):
        del findings["pg fsync"]
    return int(_fails(findings)), findings


_FSYNC_OFF = "FAIL fsync is off: "


def _fails(findings: dict[str, list[str]]) -> bool:
    return any(line.startswith("FAIL ") for lines in findings.values() for line in lines)
