"""The locale: whether text is UTF-8, and what LC_ALL says (ToBe itself runs under `C` too)."""

from __future__ import annotations

import locale
import os
import sys

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor

CHECK = "locale"
_VARIABLES = ("LC_ALL", "LC_CTYPE", "LANG")


def check_locale(doctor: Doctor) -> list[Finding]:
    encoding = locale.getpreferredencoding(False)
    said = ", ".join(f"{name}={os.environ[name]}" for name in _VARIABLES if name in os.environ)
    setting = said or "LC_ALL, LC_CTYPE and LANG unset"
    if encoding.lower().replace("-", "") == "utf8" or sys.flags.utf8_mode:
        return [Finding(Status.OK, CHECK, f"{encoding} ({setting})")]
    return [
        Finding(
            Status.WARN,
            CHECK,
            f"{encoding}, not UTF-8 ({setting}): ToBe runs, but a terminal may show non-ASCII "
            "text (chat, file names) as escapes",
            "export LC_ALL=C.UTF-8 (or a UTF-8 locale of your language)",
        )
    ]
