"""Every server process is wired the same way: one `server.py` with `build` and `serve`."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER_PROCESSES = ("mind", "face", "hand", "awareness")


@pytest.mark.parametrize("process", SERVER_PROCESSES)
def test_a_process_has_one_server_module_that_builds_and_serves(process: str) -> None:
    servers = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / process).rglob("server.py"))
    assert servers == [f"{process}/server.py"]
    module = importlib.import_module(f"{process}.server")
    assert inspect.isfunction(module.build) and not inspect.iscoroutinefunction(module.build)
    assert inspect.iscoroutinefunction(module.serve)
