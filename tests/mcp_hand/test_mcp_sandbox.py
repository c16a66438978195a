"""A sandboxed MCP server process (`Sandbox.server_argv`, real bwrap) sees its configured
directories and the system files only, and gets its environment without it on a command
line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hand.sandbox import Sandbox

SECRET = "the-server-secret-17"


def _run(sandbox: Sandbox, script: str, rw: Path, ro: Path) -> subprocess.CompletedProcess[str]:
    argv = sandbox.server_argv(["sh", "-c", script], [rw], [ro], rw)
    assert not any(SECRET in part for part in argv)
    environment = {"PATH": os.environ.get("PATH", ""), "SERVER_TOKEN": SECRET}
    return subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=30)


def test_a_sandboxed_server_sees_only_its_directories(tmp_path: Path) -> None:
    rw, ro, outside = tmp_path / "rw", tmp_path / "ro", tmp_path / "outside"
    for directory in (rw, ro, outside):
        directory.mkdir()
    (ro / "code.js").write_text("code")
    (outside / "secret.txt").write_text("private")
    script = (
        f"echo written > {rw}/out.txt; cat {ro}/code.js; "
        f"touch {ro}/new 2>/dev/null && echo RO-WRITABLE; "
        f"cat {outside}/secret.txt 2>/dev/null && echo OUTSIDE-READABLE; "
        'echo " token=$SERVER_TOKEN home=$HOME cwd=$(pwd)"'
    )
    done = _run(Sandbox(), script, rw, ro)
    assert done.returncode == 0, done.stderr
    assert (rw / "out.txt").read_text() == "written\n"
    assert "RO-WRITABLE" not in done.stdout and not (ro / "new").exists()
    assert "OUTSIDE-READABLE" not in done.stdout and "private" not in done.stdout
    assert done.stdout == f"code token={SECRET} home=/tmp cwd={rw}\n"
