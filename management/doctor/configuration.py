"""The configuration loads (each problem named by its file line or variable), a file that holds
a secret (an API key, a token) is readable by its owner only, and no `TOBE_*` variable is a
misspelled setting (those are otherwise silently ignored)."""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor
from tobe.config import ConfigError, Settings, config_file, load_settings
from tobe.config_errors import ENV_DELIMITER, ENV_PREFIX, read_toml

CHECK = "config"
SECRET_KEYS = frozenset({"api_key", "token", "mind_token"})
_OTHERS = stat.S_IRWXG | stat.S_IRWXO
# How alike a stray variable's name must be to a setting's to be called a misspelling of it.
_CLOSE = 0.85


def check_config(doctor: Doctor) -> list[Finding]:
    strays = _stray_variables(os.environ)
    try:
        doctor.settings = load_settings()
    except ConfigError as error:
        failed = [Finding(Status.FAIL, CHECK, problem, _fix(problem)) for problem in error.problems]
        return failed + strays
    return _file(doctor, config_file()) + strays


def _file(doctor: Doctor, path: Path) -> list[Finding]:
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


def _stray_variables(environ: Mapping[str, str]) -> list[Finding]:
    """`TOBE_*` variables that name no setting but nearly spell one (`TOBE_FACE_LISTEN`).

    Other `TOBE_*` variables are not settings (`TOBE_CONFIG`, a test's own) and are left alone.
    """
    names = _setting_variables(Settings)
    findings = []
    for variable in sorted(environ):
        upper = variable.upper()
        if not upper.startswith(ENV_PREFIX) or any(
            upper == name or upper.startswith(name + ENV_DELIMITER) for name in names
        ):
            continue
        close = difflib.get_close_matches(upper, names, n=1, cutoff=_CLOSE)
        if close:
            findings.append(
                Finding(
                    Status.WARN,
                    CHECK,
                    f"{variable} is not a setting, so it is ignored; did you mean {close[0]}?",
                    "rename it, or unset it",
                )
            )
    return findings


def _setting_variables(model: type[BaseModel], prefix: str = ENV_PREFIX) -> list[str]:
    """The variable of every setting and section: TOBE_DATA_DIR, TOBE_FACE, TOBE_FACE__LISTEN…"""
    names = []
    for field, info in model.model_fields.items():
        name = f"{prefix}{field.upper()}"
        names.append(name)
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            names += _setting_variables(info.annotation, name + ENV_DELIMITER)
    return names


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
        return "remove it (docs/configuration.md lists the settings)"
    return "correct the value at that line"
