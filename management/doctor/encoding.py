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
    # The C library's codeset is what the terminal is told; Python itself switches to its UTF-8
    # mode under the C locale (PEP 540), which is why ToBe runs there too.
    codeset = locale.nl_langinfo(locale.CODESET)
    said = ", ".join(f"{name}={os.environ[name]}" for name in _VARIABLES if name in os.environ)
    setting = said or "LC_ALL, LC_CTYPE and LANG unset"
    if codeset.lower().replace("-", "") == "utf8":
        return [Finding(Status.OK, CHECK, f"{codeset} ({setting})")]
    mode = "on" if sys.flags.utf8_mode else "off"
    return [
        Finding(
            Status.WARN,
            CHECK,
            f"{codeset}, not UTF-8 ({setting}): ToBe runs (Python's UTF-8 mode is {mode}), but "
            "a terminal may show non-ASCII text as escapes",
            "export LC_ALL=C.UTF-8 (or a UTF-8 locale of your language)",
        )
    ]
