"""The configuration file and `TOBE_*` variables load; each problem names its line or variable."""

from __future__ import annotations

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.config import ConfigError, config_file, load_settings

CHECK = "config"


def check_config(doctor: Doctor) -> list[Finding]:
    path = config_file()
    try:
        doctor.settings = load_settings()
    except ConfigError as error:
        return [Finding(Status.FAIL, CHECK, problem, _fix(problem)) for problem in error.problems]
    if not path.exists():
        return [Finding(Status.OK, CHECK, f"no file at {path}; defaults and TOBE_* variables")]
    return [Finding(Status.OK, CHECK, f"{path} is valid")]


def _fix(problem: str) -> str:
    if problem.startswith("TOBE_"):
        return f"correct or unset {problem.split(':', 1)[0]}"
    if "invalid TOML" in problem:
        return "correct the TOML syntax at that line and column"
    if "did you mean" in problem:
        return "rename it as suggested, or remove it"
    if "unknown" in problem:
        return "remove it (README, Configuration, lists the settings)"
    return "correct the value at that line"
