"""A service started by `tobe up` ends when `tobe up` does, however `tobe up` ended.

`tobe up` names itself in `TOBE_SUPERVISOR_PID`; the child asks the kernel for SIGTERM on its
parent's death. Done in the child at start rather than in a `preexec_fn`: Python code between
fork and exec is unsafe in `tobe up`, whose gRPC threads are running while it spawns.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

SUPERVISOR_ENV = "TOBE_SUPERVISOR_PID"
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
