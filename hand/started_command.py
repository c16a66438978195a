"""Starting a command and ending it with everything it started, whatever happens meanwhile.

A sandboxed command runs in its own PID namespace: killing the namespace's first process ends
every process in it. bwrap reports that process's host pid on a pipe (`--info-fd`), read as the
command starts; its process group (bwrap itself, or an unconfined command's) is killed too.
bwrap's `--die-with-parent` alone was seen to leave a sandbox running after bwrap was killed.

A call cancelled while its command starts still has it killed once it has started: the program
runs as soon as it is forked, before the spawn's coroutine resumes.

When the Hand itself dies (kill -9, out of memory) nobody is left to do that. On Linux each
command therefore runs below `hand.command_guard`, which the kernel tells of the death of the
thread that started it and which then kills every process below it, the sandbox's included: no
command the Hand started outlives it. asyncio forks in the event loop's thread (the main thread
of `tobe hand serve`), the thread whose death counts. Elsewhere a command outlives a killed Hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from hand import command_guard
from hand.sandbox import Launch

# Where the guard can follow the Hand; elsewhere a command is started as it is.
GUARDED = sys.platform.startswith("linux")


@dataclass
class StartedCommand:
    process: asyncio.subprocess.Process
    # The host pid of the sandbox's first process; None for an unconfined command.
    sandbox_pid: int | None = None

    def kill(self) -> None:
        """SIGKILL the command's process group and, while bwrap has not been reaped (so the pid
        is still the sandbox's), the sandbox's first process."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.sandbox_pid is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.sandbox_pid, signal.SIGKILL)


async def start_command(launch: Launch, cwd: Path) -> StartedCommand:
    """Start `launch` in `cwd` with its output piped; killed once started if cancelled."""
    starting = asyncio.ensure_future(_start(launch, cwd))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        starting.add_done_callback(_kill_started)
        raise


async def _start(launch: Launch, cwd: Path) -> StartedCommand:
    try:
        process = await asyncio.create_subprocess_exec(
            *(_guarded(launch) if GUARDED else launch.argv),
            cwd=cwd,
            env=launch.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=() if launch.report is None else (launch.report.write,),
        )
    except BaseException:
        if launch.report is not None:
            os.close(launch.report.read)
        raise
    finally:
        if launch.report is not None:
            os.close(launch.report.write)
    started = StartedCommand(process)
    if launch.report is not None:
        started.sandbox_pid = await asyncio.to_thread(_first_process, launch.report.read)
    return started


def _guarded(launch: Launch) -> list[str]:
    """`launch`'s command line run below `hand.command_guard`, following this process."""
    report = -1 if launch.report is None else launch.report.write
    guard = [sys.executable, "-I", "-S", command_guard.__file__]
    return [*guard, str(os.getpid()), str(report), "--", *launch.argv]


def _first_process(read: int) -> int | None:
    """The `child-pid` bwrap writes on its info pipe, read to its end (None if it wrote none:
    it failed before creating the sandbox)."""
    data = b""
    try:
        while chunk := os.read(read, 4096):
            data += chunk
    finally:
        os.close(read)
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


def _kill_started(starting: asyncio.Future[StartedCommand]) -> None:
    if not starting.cancelled() and starting.exception() is None:
        starting.result().kill()
