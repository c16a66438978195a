"""What a running `tobe up` supervises: `<data_dir>/up.json`, for `tobe doctor`.

`tobe up` writes it once its services are up, again each time it leaves one stopped (after its
start limit, `management.up_restarts`, or because it exited by itself), naming its last error
line and log, and removes it when it ends. A file whose writer is gone (`tobe up` was killed)
is ignored. Written like runtime.json: a private temporary file renamed over it, owner-only.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tobe.runtime.ports import command_line
from tobe.runtime.private_files import replace_json

STATE_FILE = "up.json"


@dataclass(frozen=True)
class StoppedService:
    """A service `tobe up` no longer restarts."""

    name: str
    # Why: "failed 5 times within 60 s", "exited by itself (status 0)".
    reason: str
    # Whether it failed (else it exited cleanly, status 0).
    failed: bool
    # The line of its log that best says why it ended (`up_restarts.last_error_line`).
    last_line: str
    log: str


@dataclass(frozen=True)
class UpState:
    # The `tobe up` process.
    pid: int
    services: list[str]
    stopped: list[StoppedService] = field(default_factory=list)


def state_file(data_dir: Path) -> Path:
    return data_dir / STATE_FILE


def write_state(data_dir: Path, state: UpState) -> None:
    replace_json(state_file(data_dir), asdict(state))


def remove_state(data_dir: Path) -> None:
    """Remove the file if this process wrote it (another `tobe up`'s stays)."""
    state = read_state(data_dir)
    if state is not None and state.pid == os.getpid():
        state_file(data_dir).unlink(missing_ok=True)


def running_up(data_dir: Path) -> UpState | None:
    """The state of the `tobe up` running on `data_dir`; None when none runs (or it was killed,
    and its pid may now be an unrelated process's)."""
    state = read_state(data_dir)
    if state is None or "tobe" not in command_line(state.pid):
        return None
    return state


def read_state(data_dir: Path) -> UpState | None:
    try:
        raw = json.loads(state_file(data_dir).read_text(encoding="utf-8"))
        return UpState(
            pid=int(raw["pid"]),
            services=[str(name) for name in raw["services"]],
            stopped=[
                StoppedService(
                    str(entry["name"]),
                    str(entry["reason"]),
                    bool(entry["failed"]),
                    str(entry["last_line"]),
                    str(entry["log"]),
                )
                for entry in raw["stopped"]
            ],
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
