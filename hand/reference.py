"""The reference Hand: file and command tools confined to one workspace directory.

Local policy (the Hand has the final word on its device): in read-only mode every tool that
is not read-only is rejected; `run_command` runs only programs named in the allowed list
(bare names, never paths), with no shell, in the workspace, under a timeout and an output
limit. Commands run in the sandbox of `hand.sandbox`, which sees only the workspace and the
system's read-only files: that, not the refusal of path-like arguments (absolute, or with
`..`, a courtesy that explains the mistake early), is what keeps an allowed program, even an
interpreter such as `python3`, from reading or writing outside the workspace.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from hand._hand import Hand, Offer
from hand._progress import report_progress
from hand._tools import Effect, ToolError
from hand.sandbox import Confinement, Sandbox
from hand.started_command import start_command
from hand.workspace import Workspace, WorkspaceError

MAX_READ_BYTES = 1024 * 1024
MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class ReferencePolicy:
    read_only: bool = False
    allowed_commands: frozenset[str] = field(default_factory=frozenset)

    def __call__(self, offer: Offer, effects: dict[str, Effect]) -> str | None:
        effect = effects.get(offer.tool, Effect.EXTERNAL_SIDE_EFFECT)
        if self.read_only and effect is not Effect.READ_ONLY:
            return f"this Hand is read-only: {offer.tool} is refused"
        if offer.tool == "run_command":
            argv = offer.arguments.get("argv")
            if not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
                return None  # argument validation reports the problem
            if argv[0] not in self.allowed_commands:
                allowed = ", ".join(sorted(self.allowed_commands)) or "none"
                return f"command {argv[0]!r} is not allowed on this Hand (allowed: {allowed})"
        return None


def _entry(workspace: Workspace, path: Path) -> dict[str, Any]:
    if path.is_symlink():
        kind = "symlink"
    elif path.is_dir():
        kind = "dir"
    else:
        kind = "file"
    size = path.lstat().st_size if kind == "file" else 0
    return {"path": workspace.relative(path), "type": kind, "size": size}


def _walk(directory: Path) -> list[Path]:
    """Everything below `directory`, without following symlinked directories."""
    found: list[Path] = []
    for base, dirs, files in os.walk(directory, followlinks=False):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            found.append(Path(base) / name)
    return found


async def _read_limited(stream: asyncio.StreamReader, limit: int) -> tuple[bytes, bool]:
    """Read a stream to its end, keeping at most `limit` bytes."""
    kept = bytearray()
    truncated = False
    while chunk := await stream.read(65536):
        room = limit - len(kept)
        if len(chunk) > room:
            truncated = True
        kept += chunk[: max(room, 0)]
    return bytes(kept), truncated


def build_reference_hand(
    name: str,
    workspace_dir: Path,
    *,
    read_only: bool = False,
    require_binding: bool = False,
    allowed_commands: list[str] | tuple[str, ...] = (),
    command_timeout: float = 30.0,
    max_output_bytes: int = 64 * 1024,
    version: str = "",
    confinement: Confinement | None = None,
    run_commands: bool = True,
) -> Hand:
    """The reference Hand; commands run in `confinement`, by default the bwrap `Sandbox`.
    Without `run_commands` it has no `run_command` tool: the model is not offered one."""
    workspace = Workspace(workspace_dir)
    commands: Confinement = confinement or Sandbox()
    policy = ReferencePolicy(read_only, frozenset(allowed_commands))
    hand = Hand(name, version=version, require_binding=require_binding)
    hand.policy = lambda offer: policy(offer, {t.name: t.effect for t in hand.tools.values()})

    @hand.tool(effect=Effect.READ_ONLY)
    def list_files(path: str = ".", recursive: bool = False) -> dict[str, Any]:
        """List the entries of a workspace directory (recursively when asked)."""
        directory = workspace.resolve(path)
        if not directory.is_dir():
            raise WorkspaceError(f"{path!r} is not a directory")
        children = _walk(directory) if recursive else sorted(directory.iterdir())
        entries = [_entry(workspace, child) for child in children[:1000]]
        return {
            "path": workspace.relative(directory),
            "entries": entries,
            "truncated": len(children) > 1000,
        }

    @hand.tool(effect=Effect.READ_ONLY)
    def read_file(path: str, max_bytes: int = 64 * 1024) -> dict[str, Any]:
        """Read a text file of the workspace (UTF-8; at most max_bytes bytes)."""
        target = workspace.resolve(path)
        if not target.is_file():
            raise WorkspaceError(f"{path!r} is not a file")
        limit = max(1, min(max_bytes, MAX_READ_BYTES))
        with open(target, "rb") as handle:
            data = handle.read(limit + 1)
        return {
            "path": workspace.relative(target),
            "content": data[:limit].decode("utf-8", errors="replace"),
            "truncated": len(data) > limit,
        }

    @hand.tool(effect=Effect.WORKSPACE_WRITE)
    def write_file(path: str, content: str, create_dirs: bool = True) -> dict[str, Any]:
        """Write a text file in the workspace, replacing its content."""
        target = workspace.resolve(path)
        if target == workspace.root or target.is_dir():
            raise WorkspaceError(f"{path!r} is a directory")
        if create_dirs:
            target.parent.mkdir(parents=True, exist_ok=True)
        if not workspace.contains(target.parent):
            raise WorkspaceError(f"{path!r} leads outside the workspace")
        data = content.encode("utf-8")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        descriptor = os.open(target, flags, 0o644)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        return {"path": workspace.relative(target), "bytes": len(data)}

    @hand.tool(effect=Effect.READ_ONLY)
    def search_files(
        pattern: str, path: str = ".", regex: bool = False, max_matches: int = 200
    ) -> dict[str, Any]:
        """Find lines containing `pattern` (or matching it as a regex) in workspace files."""
        root = workspace.resolve(path)
        try:
            matcher = re.compile(pattern if regex else re.escape(pattern))
        except re.error as exc:
            raise ToolError(f"invalid regular expression: {exc}") from None
        candidates = [root] if root.is_file() else _walk(root)
        matches: list[dict[str, Any]] = []
        for file in candidates:
            if file.is_symlink() or not file.is_file():
                continue
            if file.stat().st_size > MAX_SEARCH_FILE_BYTES:
                continue
            text = file.read_bytes().decode("utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), start=1):
                if matcher.search(line):
                    matches.append(
                        {"path": workspace.relative(file), "line": number, "text": line[:500]}
                    )
                    if len(matches) >= max_matches:
                        return {"matches": matches, "truncated": True}
        return {"matches": matches, "truncated": False}

    if not run_commands:
        return hand

    @hand.tool(effect=Effect.EXTERNAL_SIDE_EFFECT, decision="{argv}")
    async def run_command(
        argv: list[str], cwd: str = ".", timeout: float | None = None
    ) -> dict[str, Any]:
        """Run an allowed program (no shell) in the workspace; output is truncated."""
        if not argv or "/" in argv[0]:
            raise ToolError("argv[0] must be the bare name of an allowed program")
        for argument in argv[1:]:
            pure = PurePosixPath(argument)
            if pure.is_absolute() or ".." in pure.parts:
                raise WorkspaceError(
                    f"argument {argument!r} points outside the workspace; use relative paths"
                )
        directory = workspace.resolve(cwd)
        limit = command_timeout if timeout is None else max(0.1, min(timeout, command_timeout))
        launch = commands.launch(argv, workspace.root, directory, report=True)
        report_progress(f"running {argv[0]}", None)
        started = await start_command(launch, directory)
        process = started.process
        assert process.stdout is not None and process.stderr is not None
        reading = asyncio.gather(
            _read_limited(process.stdout, max_output_bytes),
            _read_limited(process.stderr, max_output_bytes),
            process.wait(),
        )
        try:
            (stdout, out_cut), (stderr, err_cut), code = await asyncio.wait_for(reading, limit)
        except TimeoutError:
            started.kill()
            await process.wait()
            return {
                "exit_code": None,
                "timed_out": True,
                "stdout": "",
                "stderr": "",
                "truncated": False,
                "timeout": limit,
            }
        except asyncio.CancelledError:
            started.kill()
            raise
        return {
            "exit_code": code,
            "timed_out": False,
            "stdout": stdout.decode("utf-8", errors="replace"),
            "stderr": stderr.decode("utf-8", errors="replace"),
            "truncated": out_cut or err_cut,
        }

    return hand
