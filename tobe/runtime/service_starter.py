"""The service starter: one process that loads what every service imports, then forks each.

`tobe up` runs four or five Python services. Spawned one by one, each loads the same gRPC,
protobuf, pydantic, click and contract modules again, on a box with two cores, and holds its
own copy of their objects. Forked from a process that loaded them once, a service starts with
them in place, and its pages stay shared with its siblings' until written (`gc.freeze` keeps
the collector from writing them). Run as `python -m tobe.runtime.service_starter` by
`management.up_starter`, on Linux, where fork is the system's own way to start a process.

It talks to `tobe up` over a SOCK_SEQPACKET socket given as its stdin: each request is one JSON
message `{"argv": [...], "env": {...}, "umask": n}` carrying the service's log file and, for a held
service, the read end of its release pipe (SCM_RIGHTS); it answers `{"started": pid}`, and
`{"exited": pid, "code": code}` once a service ends (a negative code is the signal that ended
it, as subprocess gives it). The starter holds no thread, channel or server: forking it is
safe. It ends with `tobe up` (`tobe.runtime.supervisor.follow_supervisor`) or when its socket
closes; its services end with it (they follow it the same way).

A forked service becomes what `python -m tobe <argv>` would be: its own session, its log as
stdout and stderr, exactly its environment, its command line as its process title, and a
normal interpreter exit (the child returns out of this module's `__main__`, so SystemExit,
atexit handlers and thread joins behave as in a spawned process).
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import sys
from dataclasses import dataclass

import setproctitle

from tobe.runtime.supervisor import SUPERVISOR_ENV, follow_supervisor

# Imported by every service (measured: the modules Mind, Face, Hand and Awareness all load to
# serve, and the contracts at least two of them use).
PRELOAD = (
    "asyncio",
    "click",
    "grpc",
    "grpc.aio",
    "grpc_health.v1.health",
    "grpc_reflection.v1alpha.reflection",
    "pydantic",
    "pydantic_settings",
    "tobe.cli",
    "tobe.config",
    "tobe.runtime.logs",
    "tobe.runtime.server",
    "tobe.telemetry.setup",
    "tobe.v1.awareness_pb2_grpc",
    "tobe.v1.events_pb2",
    "tobe.v1.hand_pb2_grpc",
    "tobe.v1.mind_pb2_grpc",
)
# One request: its JSON and at most two descriptors (the log, the release pipe).
MAX_MESSAGE = 1 << 20
MAX_FDS = 2


@dataclass(frozen=True)
class Order:
    """What a forked child is to become."""

    argv: list[str]
    env: dict[str, str]
    umask: int


def serve(control: socket.socket) -> Order | None:
    """Preload, then fork a service per request until the socket closes (None: the starter
    ends). Returns in a forked child only, with what that child is to run."""
    gc.disable()
    for module in PRELOAD:
        # Not importlib.import_module: `-X importtime` reports only what goes through this.
        __import__(module)
    # Takes over the memory of the command line while the environment is the starter's own:
    # a child, whose environment is replaced, could not.
    setproctitle.setproctitle(setproctitle.getproctitle())
    gc.freeze()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj == wake_read:
                while _drained(wake_read):
                    pass
                continue
            message, fds, _flags, _address = socket.recv_fds(control, MAX_MESSAGE, MAX_FDS)
            if not message:
                return None
            order = _order(message)
            sys.stdout.flush()
            sys.stderr.flush()
            starter = os.getpid()
            pid = os.fork()
            if pid == 0:
                selector.close()
                for fd in (wake_read, wake_write):
                    os.close(fd)
                _become(order, fds, control, starter)
                return order
            for fd in fds:
                os.close(fd)
            control.send(json.dumps({"started": pid}).encode())
        _reap(control)


def _drained(fd: int) -> bool:
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


def _reap(control: socket.socket) -> None:
    """Tell `tobe up` of every child that ended."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        notice = {"exited": pid, "code": os.waitstatus_to_exitcode(status)}
        try:
            control.send(json.dumps(notice).encode())
        except OSError:
            return  # `tobe up` is gone; so will this process be


def _order(message: bytes) -> Order:
    request = json.loads(message)
    return Order([str(word) for word in request["argv"]], {**request["env"]}, int(request["umask"]))


def _become(order: Order, fds: list[int], control: socket.socket, starter: int) -> None:
    """In the child: the process `python -m tobe` would have been, up to running it."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    control.close()
    os.setsid()
    log, release = fds[0], (fds[1] if len(fds) > 1 else os.open(os.devnull, os.O_RDONLY))
    os.dup2(release, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    for fd in {log, release}:
        os.close(fd)
    os.umask(order.umask)
    os.environ.clear()
    os.environ.update(order.env)
    # The services follow the starter, their parent, as they would follow `tobe up` (its pid
    # as known before the fork: if it is already gone, the child's parent is another).
    os.environ[SUPERVISOR_ENV] = str(starter)
    # The preloaded objects stay frozen: collecting them would write every page they share.
    gc.enable()


def run(order: Order) -> None:
    """Run the forked service as `python -m tobe` runs it (`tobe/__main__.py`)."""
    import tobe
    from tobe.cli import main
    from tobe.runtime.supervisor import wait_for_release

    setproctitle.setproctitle(" ".join([sys.executable, "-m", "tobe", *order.argv]))
    sys.argv = [os.path.join(os.path.dirname(tobe.__file__), "__main__.py"), *order.argv]
    follow_supervisor()
    wait_for_release()
    main(prog_name="python -m tobe")


def _main() -> None:
    follow_supervisor()
    control = socket.socket(fileno=os.dup(0))
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    order = serve(control)
    if order is not None:
        run(order)


if __name__ == "__main__":
    _main()
