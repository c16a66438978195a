"""The configuration loads (each problem named by its file line or variable), and a file that
holds a secret (an API key, a token) is readable by its owner only."""

from __future__ import annotations

import os
import stat
from typing import Any

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.config import ConfigError, config_file, load_settings
from tobe.config_errors import read_toml

CHECK = "config"
SECRET_KEYS = frozenset({"api_key", "token", "mind_token"})
_OTHERS = stat.S_IRWXG | stat.S_IRWXO


def check_config(doctor: Doctor) -> list[Finding]:
    path = config_file()
    try:
        doctor.settings = load_settings()
    except ConfigError as error:
        return [Finding(Status.FAIL, CHECK, problem, _fix(problem)) for problem in error.problems]
    document = read_toml(path)
    if document is None:
        return [Finding(Status.OK, CHECK, f"no file at {path}; defaults and TOBE_* variables")]
    secrets = sorted(_secrets(document[1]))
    mode = stat.S_IMODE(path.stat().st_mode)
    if not secrets or not mode & _OTHERS:
        return [Finding(Status.OK, CHECK, f"{path} is valid")]
    exposed = f"{path} holds {', '.join(secrets)} and is readable by other users ({mode:04o})"
    if not doctor.fix:
        return [Finding(Status.FAIL, CHECK, exposed, "`tobe doctor --fix` makes it owner-only")]
    os.chmod(path, mode & ~_OTHERS)
    return [Finding(Status.FIXED, CHECK, f"{exposed}; made it owner-only")]


def _secrets(table: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted names of secret values in `table` (`provider.api_key`)."""
    found = []
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            found += _secrets(value, f"{name}.")
        elif key in SECRET_KEYS and value:
            found.append(name)
    return found


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
