"""What a check found, and how one finding is printed: one coloured line with its fix."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import click


class Status(Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "FAIL"
    # `--fix` repaired it; the text says what changed.
    FIXED = "fixed"
    # Not applicable now (ToBe not running, an earlier check failed); the text says why.
    SKIP = "skip"


_COLOURS = {
    Status.OK: "green",
    Status.WARN: "yellow",
    Status.FAIL: "red",
    Status.FIXED: "cyan",
    Status.SKIP: "bright_black",
}


@dataclass(frozen=True)
class Finding:
    status: Status
    # Which check: "config", "port mind", "credentials", …
    check: str
    text: str
    # What a person does about it (empty when nothing is to be done).
    fix: str = ""


def line(finding: Finding) -> str:
    """`FAIL  port face    127.0.0.1:7420 is in use by … — fix: …`, coloured on a terminal."""
    status = click.style(f"{finding.status.value:<5}", fg=_COLOURS[finding.status], bold=True)
    fix = f" — fix: {finding.fix}" if finding.fix else ""
    return f"{status} {finding.check:<17} {finding.text}{fix}"
