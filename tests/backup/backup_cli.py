"""`tobe backup` and `tobe restore` run as a person runs them: in a process of their own
(`tobe`), or through the same command in this process (`tobe_here`, click's runner)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from tobe.cli import main


def cli_env(data_dir: Path, config: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(TOBE_DATA_DIR=str(data_dir), TOBE_CONFIG=str(config), **extra)
    return env


def tobe(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tobe", *args], env=env, capture_output=True, text=True, timeout=120
    )


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str


def tobe_here(env: dict[str, str], *args: str) -> Outcome:
    result = CliRunner().invoke(main, list(args), env=env)
    return Outcome(result.exit_code, result.stdout, result.stderr)


def tree(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under `root`, by relative path: its mode and a digest of its content."""
    found: dict[str, tuple[int, str]] = {}
    if not root.exists():
        return found
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_symlink() or not path.is_file():
            found[relative] = (path.lstat().st_mode, "")
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[relative] = (path.stat().st_mode & 0o777, digest)
    return found
