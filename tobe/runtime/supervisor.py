"""How a service started by `tobe up` starts and ends with it.

Ends: its parent (`tobe up`, or on Linux the starter that forked it,
`tobe.runtime.service_starter`, which follows `tobe up` the same way) names itself in
`TOBE_SUPERVISOR_PID`; the child asks the kernel for SIGTERM on its parent's death. Done in the
child at start rather than in a `preexec_fn`: Python code between fork and exec is unsafe in
`tobe up`, whose threads are running while it spawns.

Starts: a service of a later wave is spawned early and held (`TOBE_START_HELD` names the
modules it loads meanwhile); it starts once `tobe up` writes one JSON line of further
environment (the addresses of the services it comes after) to its stdin.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import signal
import sys
from typing import IO

from tobe.runtime.import_pause import collector_paused

SUPERVISOR_ENV = "TOBE_SUPERVISOR_PID"
HELD_ENV = "TOBE_START_HELD"
_PR_SET_PDEATHSIG = 1


def supervisor_env() -> dict[str, str]:
    """The variables a supervised child needs to follow this process."""
    return {SUPERVISOR_ENV: str(os.getpid())}


def follow_supervisor() -> None:
    """End with SIGTERM when the supervisor named in the environment ends (Linux only)."""
    supervisor = os.environ.pop(SUPERVISOR_ENV, "")
    if not supervisor or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    # The supervisor may have died before the request took effect.
    if os.getppid() != int(supervisor):
        os.kill(os.getpid(), signal.SIGTERM)


def held_env(preload: tuple[str, ...]) -> dict[str, str]:
    """The variables that hold a child until `release`, loading `preload` meanwhile."""
    return {HELD_ENV: ",".join(preload)}


def release(stdin: IO[bytes], env: dict[str, str]) -> None:
    """Let a held child start, with `env` added to its environment."""
    stdin.write(json.dumps(env).encode() + b"\n")
    stdin.close()


def wait_for_release() -> None:
    """When held: load the named modules, then wait for the supervisor's go and environment.

    An end of input instead means the supervisor stopped before its wave came: exit quietly.
    """
    preload = os.environ.pop(HELD_ENV, None)
    if preload is None:
        return
    with collector_paused():
        for module in filter(None, preload.split(",")):
            importlib.import_module(module)
    line = sys.stdin.buffer.readline()
    if not line:
        raise SystemExit(0)
    os.environ.update(json.loads(line))
