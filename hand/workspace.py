"""A directory the reference Hand's tools are confined to.

Every path a tool receives is relative to the workspace root. Absolute paths, `~`, and `..`
components are refused outright; what remains is resolved with symlinks followed, and refused
when the real path is outside the root (a symlink pointing out). Refusals raise
`WorkspaceError` before anything is read, written or created.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from hand._tools import ToolError


class WorkspaceError(ToolError):
    """A path was refused because it would leave the workspace (or the workspace is read-only)."""


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"workspace {self.root} is not a directory")

    def resolve(self, path: str) -> Path:
        """The real path of `path` inside the workspace; WorkspaceError when it would leave it."""
        if "\x00" in path:
            raise WorkspaceError("paths cannot contain NUL characters")
        pure = PurePosixPath(path or ".")
        if pure.is_absolute() or path.startswith("~"):
            raise WorkspaceError(
                f"{path!r} is absolute: give a path relative to the workspace root"
            )
        if ".." in pure.parts:
            raise WorkspaceError(f"{path!r} contains '..': paths must stay inside the workspace")
        real = (self.root / pure).resolve(strict=False)
        if not real.is_relative_to(self.root):
            raise WorkspaceError(f"{path!r} leads outside the workspace (through a symlink)")
        return real

    def relative(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() or "."

    def contains(self, path: Path) -> bool:
        """Whether `path`, with symlinks followed, is inside the workspace."""
        return path.resolve(strict=False).is_relative_to(self.root)
