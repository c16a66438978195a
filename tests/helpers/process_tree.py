"""The processes under a process, read from /proc (Linux), each named by pid and start time so a
pid reused by an unrelated process is never mistaken for one of them."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import NamedTuple


class Running(NamedTuple):
    pid: int
    start_time: int
    argv: tuple[str, ...]


def _stat(pid: int) -> tuple[str, int, int] | None:
    """State, parent pid and start time of `pid` (None: no such process)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1]), int(fields[19])


def _argv(pid: int) -> tuple[str, ...]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ()
    return tuple(part.decode(errors="replace") for part in raw.split(b"\0") if part)


def descendants(pid: int) -> list[Running]:
    """Every live process below `pid` (children, their children, …)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            children.setdefault(stat[1], []).append(int(entry.name))
    found: list[Running] = []
    waiting = list(children.get(pid, []))
    while waiting:
        child = waiting.pop()
        stat = _stat(child)
        if stat is not None and stat[0] != "Z":
            found.append(Running(child, stat[2], _argv(child)))
        waiting += children.get(child, [])
    return found


def still_running(processes: list[Running]) -> list[Running]:
    """Those of `processes` that have not ended (a zombie has ended: only its reaping is due)."""
    alive = []
    for process in processes:
        stat = _stat(process.pid)
        if stat is not None and stat[0] != "Z" and stat[2] == process.start_time:
            alive.append(process)
    return alive


def kill_all(processes: list[Running]) -> None:
    """SIGKILL those of `processes` still running."""
    for process in still_running(processes):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)


def naming(text: str) -> list[Running]:
    """Every live process whose command line contains `text`, with every process below it."""
    found: list[Running] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and any(text in part for part in _argv(int(entry.name))):
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] != "Z":
                found.append(Running(int(entry.name), stat[2], _argv(int(entry.name))))
                found += descendants(int(entry.name))
    return found
