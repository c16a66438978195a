"""Owner-only files: the data directory and the credentials in it.

Another local user must not read the store, the logs or a token (`tobe.runtime.private_files`).
`--fix` removes group and other access, as `tobe up` does at start, and names each path.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from management.doctor.report import Finding, Status
from management.doctor.state import Doctor

_OTHERS = stat.S_IRWXG | stat.S_IRWXO
_SHOWN = 3


def check_permissions(doctor: Doctor) -> list[Finding]:
    if doctor.settings is None:
        return [Finding(Status.SKIP, "data directory", "the configuration does not load")]
    data_dir = doctor.settings.data_dir
    credentials = doctor.settings.credentials_dir
    return [
        _check(doctor, "data directory", data_dir, exclude=credentials),
        _check(doctor, "credential files", credentials, exclude=None),
    ]


def _check(doctor: Doctor, check: str, root: Path, exclude: Path | None) -> Finding:
    if not root.is_dir():
        return Finding(Status.OK, check, f"{root} does not exist yet (`tobe up` creates it)")
    paths = _walk(root, exclude)
    exposed = _exposed(paths)
    foreign = [path for path in paths if _owner(path) not in (None, os.getuid())]
    if foreign:
        return Finding(
            Status.FAIL,
            check,
            f"{_list(foreign)} belong to another user",
            f"chown -R {os.getuid()} {root} (as root), or use a data directory of your own",
        )
    if not exposed:
        return Finding(Status.OK, check, f"{root}: owner-only")
    shown = _list([f"{path} ({stat.S_IMODE(mode):04o})" for path, mode in exposed])
    if not doctor.fix:
        return Finding(
            Status.FAIL,
            check,
            f"readable by other users: {shown}",
            "`tobe doctor --fix` makes them owner-only (chmod go-rwx)",
        )
    for path, mode in exposed:
        os.chmod(path, stat.S_IMODE(mode) & ~_OTHERS)
    changed = _list([f"{path} ({stat.S_IMODE(mode):04o} -> owner-only)" for path, mode in exposed])
    return Finding(Status.FIXED, check, f"removed group and other access: {changed}")


def _exposed(paths: list[Path]) -> list[tuple[Path, int]]:
    """The paths that group or others may access, with their mode (links are not followed)."""
    found = []
    for path in paths:
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            continue  # removed meanwhile (a temporary file)
        if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & _OTHERS:
            found.append((path, mode))
    return found


def _walk(root: Path, exclude: Path | None) -> list[Path]:
    paths = [root]
    for directory, subdirectories, files in os.walk(root):
        if exclude is not None:
            subdirectories[:] = [d for d in subdirectories if Path(directory, d) != exclude]
        paths += [Path(directory, name) for name in [*subdirectories, *files]]
    return paths


def _owner(path: Path) -> int | None:
    try:
        return path.lstat().st_uid
    except FileNotFoundError:
        return None


def _list(items: list[str] | list[Path]) -> str:
    shown = ", ".join(str(item) for item in items[:_SHOWN])
    more = len(items) - _SHOWN
    return f"{shown} and {more} more" if more > 0 else shown
