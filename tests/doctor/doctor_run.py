"""`tobe doctor` run in this process (click's runner) on one data directory, and its lines."""

from __future__ import annotations

import os
import re
from pathlib import Path

from click.testing import CliRunner
from helpers.ports import free_port
from helpers.up_process import PROVIDER_VARIABLES

from tobe.cli import main

_LINE = re.compile(r"^(ok|warn|FAIL|fixed|skip)\s+(\S+(?: \S+)?)\s{2,}(.*)$")


def doctor_env(data_dir: Path, config: Path, **settings: str) -> dict[str, str | None]:
    """No `TOBE_*` or provider key of the test run; free ports for every service."""
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
    )
    env.update(settings)
    return env


def run_doctor(env: dict[str, str | None], *args: str) -> tuple[int, dict[str, list[str]]]:
    """The exit status, and each check's lines as `status text` (status first)."""
    result = CliRunner().invoke(main, ["doctor", *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    findings: dict[str, list[str]] = {}
    for line in result.output.splitlines():
        match = _LINE.match(line)
        assert match, f"not a finding line: {line!r}"
        findings.setdefault(match.group(2), []).append(f"{match.group(1)} {match.group(3)}")
    return result.exit_code, findings
