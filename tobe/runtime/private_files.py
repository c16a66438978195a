"""Owner-only files: nothing in a data directory is readable by another local user.

The store, logs, journals and credentials hold chat text and secrets, so directories are 0700
and files 0600. Services set a umask of 0o077 at start so that whatever they (or SQLite, for
its -wal/-shm files) create is owner-only from the first byte; `tighten` repairs a tree created
before, or by something that ignored the umask, and names each path it fixed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

PRIVATE_UMASK = 0o077
DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
_OTHERS = stat.S_IRWXG | stat.S_IRWXO


def private_umask() -> None:
    """Make everything this process creates from now on owner-only (children inherit it)."""
    os.umask(PRIVATE_UMASK)


def private_directory(path: Path) -> Path:
    """Create `path` (and missing parents) if needed and make it 0700; returns it."""
    path.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)
    os.chmod(path, DIRECTORY_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty if missing (0600 from the first byte), else strip others' access.

    Used before handing a path to a library that creates the file itself (SQLite), which
    otherwise applies only the process umask. A missing parent is created 0700; an existing
    one is left as it is (it may be a directory the operator chose for the file).
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        mode = stat.S_IMODE(os.fstat(descriptor).st_mode)
        if mode & _OTHERS:
            os.fchmod(descriptor, mode & ~_OTHERS)
    finally:
        os.close(descriptor)
    return path


def create_once(path: Path, content: bytes) -> None:
    """Write `path` whole (0600, fsync'd) unless a file is already there.

    The content goes to a private temporary file that is then hard-linked into place: `link`
    fails when the target exists, so writers racing to create it never see a partial file and
    never overwrite each other; the first one's content stays.
    """
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    try:
        os.fchmod(descriptor, FILE_MODE)
        with os.fdopen(descriptor, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        os.unlink(temporary)


def replace_json(path: Path, record: object) -> None:
    """Replace `path` with `record` as JSON, owner-only and fsync'd: written to a private
    temporary file renamed over it, so a reader sees the old record or the new one whole."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(descriptor, FILE_MODE)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=2)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def tighten(root: Path, warn: Callable[[str], None]) -> list[Path]:
    """Remove group and other access from `root` and everything under it; returns what changed.

    `warn` receives one sentence per fixed path. Symbolic links are neither followed nor
    changed. Owner bits are kept (an executable stays executable).
    """
    fixed: list[Path] = []
    if not root.is_dir():
        return fixed
    if _restrict(root):
        fixed.append(root)
    for directory, subdirectories, files in os.walk(root):
        for name in [*subdirectories, *files]:
            path = Path(directory) / name
            if _restrict(path):
                fixed.append(path)
    for path in fixed:
        warn(f"{path} was readable by other users; made it owner-only")
    return fixed


def _restrict(path: Path) -> bool:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False  # removed meanwhile (a temporary file)
    if stat.S_ISLNK(mode) or not stat.S_IMODE(mode) & _OTHERS:
        return False
    try:
        os.chmod(path, stat.S_IMODE(mode) & ~_OTHERS)
    except FileNotFoundError:
        return False
    return True
