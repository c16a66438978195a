"""Which files under a resources directory are resources.

Every `.md` file, recursively, except: dot files and everything in dot folders, and the
folders `node_modules`, `venv`, `.venv` and `__pycache__` (tooling, never documents). Other
extensions are ignored. Symlinked folders are not followed, and a symlinked file counts only
when it resolves inside the directory, so nothing outside it is ever catalogued.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

SUFFIX = ".md"
SKIPPED_FOLDERS = frozenset({"node_modules", "venv", ".venv", "__pycache__"})


def _kept_folder(name: str) -> bool:
    return not name.startswith(".") and name not in SKIPPED_FOLDERS


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, symlinks resolved, is `root` or lies under it."""
    return path.resolve().is_relative_to(root.resolve())


def resource_files(directory: Path) -> Iterator[Path]:
    """Paths relative to `directory` of its resources, in sorted order; none if it is absent."""
    found = []
    for root, folders, files in os.walk(directory):
        folders[:] = [name for name in folders if _kept_folder(name)]
        for name in files:
            path = Path(root) / name
            if name.endswith(SUFFIX) and not name.startswith(".") and inside(path, directory):
                found.append(path.relative_to(directory))
    yield from sorted(found, key=Path.as_posix)
