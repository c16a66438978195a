"""Move the time a scheduler reads from its clock file (`[scheduler] clock_file`).

The file is replaced atomically: a reader racing a plain `write_text` can see it empty, which
the clock reads as "use the system time" — a jump to today's real time in the middle of a test.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path


def set_clock(path: Path, moment: datetime) -> None:
    temporary = path.with_name(f".{path.name}.next")
    temporary.write_text(moment.isoformat())
    os.replace(temporary, path)
