"""The data directory's state lock: one writer (a Mind, or an offline CLI) at a time.

An advisory `flock` on `<data dir>/state.lock`; the kernel drops it when the holder dies, so a
crashed Mind never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from tobe.runtime.private_files import private_directory


class StateLockBusy(RuntimeError):
    """Another process holds the state lock."""

    def __init__(self, path: Path, holder: str) -> None:
        who = holder or "another process"
        super().__init__(f"the data directory {path.parent} is in use by {who}")
        self.path = path
        self.holder = holder


class StateLock:
    """Exclusive lock on a data directory. Records the holder's description for messages."""

    def __init__(self, data_dir: Path, holder: str) -> None:
        self.path = Path(data_dir) / "state.lock"
        self.holder = holder
        self._fd: int | None = None

    def acquire(self, timeout: float = 0.0) -> None:
        """Take the lock, waiting up to `timeout` seconds; raise StateLockBusy otherwise."""
        private_directory(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 256, 0).decode(errors="replace").strip()
                    os.close(fd)
                    raise StateLockBusy(self.path, holder) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{self.holder} (pid {os.getpid()})\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StateLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_locked(data_dir: Path) -> bool:
    """True when some process holds the state lock right now."""
    path = Path(data_dir) / "state.lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
