"""The process between the Hand and each command it runs (Linux): it ends the command, with
everything the command started, when the Hand dies, however it dies (kill -9, out of memory).

Neither bwrap nor the command can promise that. bwrap's `--die-with-parent` asks the kernel for
SIGKILL on its parent's death (PR_SET_PDEATHSIG) only after some setup, each process for itself:
bwrap after it created the sandbox, the sandbox's first process only once all its mounts are
done. A death signal asked for after the parent died is bound to the new parent (init), which
never dies; so a Hand killed as a command starts left bwrap, or the sandbox without bwrap,
running the command to its end, unseen. An unconfined command asks for nothing at all.

So the Hand starts this file (`python -I -S`, the standard library only, before anything of the
command exists) and it:

1. handles SIGTERM, becomes a subreaper (every process orphaned below it is reparented to it,
   not to init) and asks for SIGTERM on the death of the Hand's thread that started it;
2. checks that its parent still is the Hand: if the Hand died before step 1 took effect, it
   starts nothing;
3. starts the command (passing on the fd bwrap reports its sandbox on), reaps what is orphaned
   below it, and exits as the command did;
4. on SIGTERM (the Hand died) it SIGKILLs every process below it, again and again, until it
   has no child left; the sandbox's first process, an orphan below it, is among them and takes
   the sandbox's PID namespace with it.

Only SIGKILLing this process itself (it is in the command's process group, which the Hand kills
to end a command) bypasses step 4.

    python -I -S command_guard.py HAND_PID REPORT_FD -- PROGRAM [ARGUMENT …]

REPORT_FD is -1 when no fd is passed on.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
REAP_INTERVAL = 0.01
# The exit code of a command that could not be started, as a shell reports it.
NOT_STARTED = 127


def _children() -> dict[int, list[int]]:
    """Every process's children, by parent pid."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    return children


def _below(pid: int) -> list[int]:
    children = _children()
    found, waiting = [], list(children.get(pid, []))
    while waiting:
        child = waiting.pop()
        found.append(child)
        waiting += children.get(child, [])
    return found


def _end_everything(signum: int, frame: FrameType | None) -> None:
    """SIGKILL every process below this one until none is left, then exit like the Hand."""
    while True:
        for pid in _below(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            os._exit(128 + signum)
        time.sleep(REAP_INTERVAL)


def _exit_as(status: int) -> None:
    """Exit with the command's wait status: its exit code, or dying of its signal."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv: list[str]) -> None:
    hand, report, separator, *command = argv
    if separator != "--" or not command:
        sys.exit("usage: command_guard.py HAND_PID REPORT_FD -- PROGRAM [ARGUMENT …]")
    signal.signal(signal.SIGTERM, _end_everything)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(hand):
        os._exit(128 + signal.SIGTERM)  # the Hand died before it could be followed
    passed = () if report == "-1" else (int(report),)
    try:
        started = subprocess.Popen(command, pass_fds=passed)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(NOT_STARTED)
    for fd in passed:
        os.close(fd)  # the Hand reads the report to its end: only the command may hold it
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == started.pid:
            _exit_as(status)


if __name__ == "__main__":
    main(sys.argv[1:])
