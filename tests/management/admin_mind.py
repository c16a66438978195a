"""A real `tobe mind serve` process on a management test's data directory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers.mind_process import MindProcess, mind_env


@contextmanager
def mind_running(data_dir: Path, **env: str) -> Iterator[MindProcess]:
    """Start the Mind on `data_dir` (it migrates the store itself); always killed at the end."""
    mind = MindProcess(
        data_dir, mind_env(data_dir, None, **env), gateway_token="", client_tokens={}
    )
    try:
        mind.start()
        yield mind
    finally:
        mind.kill()
