"""`tobe up`'s end of the service starter (`tobe.runtime.service_starter`).

On Linux, `tobe up` starts the services by asking one starter process, which loaded what they
all import, to fork them: they start sooner and share those pages (`bench/bench_footprint.py`).
A service so started is a child of the starter, not of `tobe up`; `ForkedService` gives `tobe
up` the part of `subprocess.Popen` it uses (pid, stdin, poll, wait), fed by the starter's exit
notices. If the starter itself ends, the services it forked end with it (they follow it as
they would follow `tobe up`); each is then reported as ended by SIGTERM once its pid is gone,
and the next start brings a new starter up. Elsewhere, services are spawned as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Protocol

from management.up_restarts import exit_reason
from tobe.runtime.supervisor import supervisor_env

STARTER_MODULE = "tobe.runtime.service_starter"
# How long a start may wait for the starter's answer (it is loading what it preloads).
ANSWER_TIMEOUT = 30.0
_MAX_MESSAGE = 4096


class ServiceProcess(Protocol):
    """What `tobe up` needs of a service's process: `subprocess.Popen` has it."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | Any: ...

    @property
    def stdin(self) -> IO[bytes] | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class StarterGone(Exception):
    """The starter ended or did not answer; the service is to be spawned directly."""


class ServiceStarter:
    """The starter process and its socket; restarted on the next start if it ended."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._exits: dict[int, int] = {}
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        # Services forked and not yet known to have ended.
        self._forked: set[int] = set()
        # Those of them forked by a starter that has ended since: their end is seen in /proc.
        self._orphans: set[int] = set()
        # How the last starter ended, until `news` tells it.
        self._ended: str | None = None
        self._output = _Output()

    @staticmethod
    def supported() -> bool:
        return sys.platform.startswith("linux")

    def start(self) -> None:
        """Start the starter process: it preloads while `tobe up` goes on. Its output is kept
        until `log_to` names its log (the data directory may not be known yet)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        output, into = os.pipe()
        with theirs:
            try:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", STARTER_MODULE],
                    stdin=theirs.fileno(),
                    stdout=into,
                    stderr=into,
                    env={**os.environ, **supervisor_env()},
                    start_new_session=True,
                )
            finally:
                os.close(into)
        self._control = ours
        self._output.follow(output)

    def log_to(self, path: Path, first_line: str) -> None:
        """Write the starter's output, from `first_line` on, to the log at `path`; and that of
        each starter that replaces it, after `first_line` again."""
        self._output.log_to(path, first_line)

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def spawn(self, argv: list[str], env: dict[str, str], log: int, held: bool) -> ForkedService:
        """Fork `python -m tobe <argv>` with `env`, logging to descriptor `log`; held: with a
        pipe as its stdin, for `tobe.runtime.supervisor.release`. StarterGone if the starter
        cannot do it."""
        with self._lock:
            if self._control is None or (self._process and self._process.poll() is not None):
                self._lost()
                self.start()
                self._output.mark()
            assert self._control is not None
            release_read, release_write = os.pipe() if held else (-1, -1)
            fds = [log] if not held else [log, release_read]
            try:
                request = {"argv": argv, "env": env, "umask": _umask()}
                socket.send_fds(self._control, [json.dumps(request).encode()], fds)
                pid = self._answer()
            except (OSError, StarterGone) as exc:
                if held:
                    os.close(release_write)
                self._lost()
                raise StarterGone(str(exc)) from None
            finally:
                if held:
                    os.close(release_read)
            self._forked.add(pid)
            stdin = os.fdopen(release_write, "wb") if held else None
            return ForkedService(self, pid, stdin)

    def _answer(self) -> int:
        """The pid the starter answers with, keeping the exit notices that come first."""
        deadline = time.monotonic() + ANSWER_TIMEOUT
        assert self._control is not None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StarterGone("the service starter did not answer")
            readable, _, _ = select.select([self._control], [], [], remaining)
            if not readable:
                continue
            message = self._control.recv(_MAX_MESSAGE)
            if not message:
                raise StarterGone("the service starter ended")
            notice = json.loads(message)
            if "started" in notice:
                return int(notice["started"])
            self._exits[int(notice["exited"])] = int(notice["code"])

    def exit_code(self, pid: int) -> int | None:
        """`pid`'s exit code once it ended, else None."""
        with self._lock:
            self._collect()
            if pid in self._exits:
                self._forked.discard(pid)
                return self._exits.pop(pid)
            # Here, not at the top: this module is loaded before `tobe up` loads its own code.
            from tobe.runtime.addresses import alive

            if pid in self._orphans and not alive(pid):
                self._orphans.discard(pid)
                self._forked.discard(pid)
                return -signal.SIGTERM
            return None

    def wait_readable(self, timeout: float) -> None:
        control = self._control
        if control is None:
            time.sleep(timeout)
            return
        with contextlib.suppress(OSError, ValueError):
            select.select([control], [], [], timeout)

    def _collect(self) -> None:
        control = self._control
        if control is None:
            return
        while True:
            try:
                message = control.recv(_MAX_MESSAGE, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError:
                message = b""
            if not message:
                self._lost()
                return
            notice = json.loads(message)
            if "exited" in notice:
                self._exits[int(notice["exited"])] = int(notice["code"])

    def _lost(self) -> None:
        """The starter ended (or is to be replaced): what it forked is watched through /proc."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._process is not None:
            code = self._process.poll()
            if code is None:
                self._process.kill()
                code = self._process.wait()
            self._process = None
            if self._forked - set(self._exits):
                self._ended = exit_reason(code)
        self._orphans.update(self._forked - set(self._exits))

    def news(self) -> str | None:
        """One line, once, when the starter ended under running services."""
        with self._lock:
            self._collect()
            ended, self._ended = self._ended, None
        if ended is None:
            return None
        return (
            f"the service starter exited ({ended}); the services it started end with it "
            "and are started again"
        )

    def stop(self) -> None:
        """End the starter (after the services: it takes any left with it)."""
        with self._lock:
            if self._control is not None:
                self._control.close()
                self._control = None
            if self._process is not None:
                try:
                    self._process.wait(5)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
                self._process = None


class ForkedService:
    """A service the starter forked, as much of a `subprocess.Popen` as `tobe up` uses."""

    def __init__(self, starter: ServiceStarter, pid: int, stdin: IO[bytes] | None) -> None:
        self._starter = starter
        self.pid = pid
        self.stdin = stdin
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self._starter.exit_code(self.pid)
            if code is not None:
                self.returncode = code
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            remaining = 0.1 if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0)
            self._starter.wait_readable(min(remaining, 0.1))
        return code


class _Output:
    """The starters' output, copied by a thread from their pipe into the log once it is named,
    kept in memory until then."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: list[bytes] = []
        self._log: IO[bytes] | None = None
        self._first_line = b""

    def follow(self, output: int) -> None:
        copy = threading.Thread(target=self._copy, args=(output,), name="starter-output")
        copy.daemon = True
        copy.start()

    def log_to(self, path: Path, first_line: str) -> None:
        with self._lock:
            self._log = path.open("ab", buffering=0)
            self._first_line = f"{first_line}\n".encode()
            self._log.write(self._first_line + b"".join(self._kept))
            self._kept.clear()

    def mark(self) -> None:
        """A new starter's output begins."""
        with self._lock:
            if self._log is not None:
                self._log.write(self._first_line)

    def _copy(self, output: int) -> None:
        with os.fdopen(output, "rb", buffering=0) as pipe:
            while data := pipe.read(65536):
                with self._lock:
                    if self._log is None:
                        self._kept.append(data)
                    else:
                        self._log.write(data)


def _umask() -> int:
    """This process's umask, which a forked service takes: the starter may have been started
    before `tobe up` set it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    raise RuntimeError("no Umask line in /proc/self/status")


_early: ServiceStarter | None = None


def start_early(args: list[str]) -> None:
    """Start the starter as `tobe up` begins, before it loads its own code (`tobe.cli.EARLY`),
    so that both load at once. Not for help or `--install-service`, which start no service."""
    global _early
    if ServiceStarter.supported() and not {"-h", "--help", "--install-service"} & set(args):
        _early = ServiceStarter()
        _early.start()


def take_early() -> ServiceStarter | None:
    """The starter `start_early` started, once."""
    global _early
    early, _early = _early, None
    return early
