"""The MCP Hand's end-to-end fixtures: the pinned npm MCP servers, installed once if missing
(in CI `.ci/run` installs them; a run that must not skip, `TOBE_REQUIRE_PG=1`, fails when they
cannot be installed), and the remote test server."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from remote_server import RemoteServer, start_remote_server

SERVERS = Path(__file__).parent / "servers"
PACKAGES = SERVERS / "node_modules" / "@modelcontextprotocol"


@pytest.fixture(scope="session")
def npm_servers() -> Path:
    """node_modules/@modelcontextprotocol with server-everything and server-filesystem."""
    if (
        not (PACKAGES / "server-everything").is_dir()
        or not (PACKAGES / "server-filesystem").is_dir()
    ):
        npm = shutil.which("npm")
        if npm is None:
            if os.environ.get("TOBE_REQUIRE_PG"):
                pytest.fail("npm is needed to install the MCP test servers")
            pytest.skip("npm is not installed")
        subprocess.run(
            [npm, "ci", "--prefix", str(SERVERS), "--no-audit", "--no-fund"],
            check=True,
            capture_output=True,
            timeout=300,
        )
    return SERVERS / "node_modules"


@pytest.fixture(scope="module")
def remote() -> Iterator[RemoteServer]:
    record, stop = start_remote_server()
    try:
        yield record
    finally:
        stop()
