"""An idle `tobe up` loads only what its configuration uses.

`tobe up` runs with PYTHONPROFILEIMPORTTIME=1, which its services inherit, so every process
reports each module it imports: the supervisor on its stderr, each service in its log. A
service forked by the starter (`tobe.runtime.service_starter`) holds what the starter imported
(in `starter.log`) besides what it imported itself. The
default configuration (the offline demo provider, no TLS, no adapter or MCP server configured,
telemetry off) uses none of the libraries below, so a module-level import that brings one back
into a process fails here. Read on a restart, as a box runs every day after its first start
(which migrates the new store with Alembic). Nothing is timed.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.up_process import START_TIMEOUT, up_env

from management.up import START_MARKER

pytestmark = [pytest.mark.e2e, pytest.mark.sqlite_store]

# Loaded by no process of an idle default `tobe up`.
UNUSED = frozenset(
    {
        "alembic",  # the store is at the packaged head already
        "psycopg",  # the store is SQLite
        "sqlalchemy.dialects.postgresql",  # the store is SQLite
        "psutil",  # no port was found taken, so nobody asked who holds it
        "mcp",  # no MCP server is configured
        "opentelemetry",  # telemetry is off
        "trafilatura",  # web_fetch has not been called
        "httpx",  # no provider, web tool, feed or webhook has made a request
        "rich",  # the terminal user interface is `tobe chat`'s
        "PIL",  # no image has arrived
        "cryptography",  # no TLS, no sealed turn, no stored provider key
        "croniter",  # no cron trigger
        "caldav",  # no calendar is configured
        "feedparser",  # no feed is configured
        "aiomqtt",  # no MQTT broker is configured
        "imapclient",  # no mailbox is configured
    }
)
# Besides, the code each process must not load: another service's, or the store's driver (the
# supervisor asks `hand.sandbox` whether the command sandbox runs, without the Hand SDK; it
# learns whether a service is ready from its plain-text probe, without a gRPC client).
NOT_ITS_OWN = {
    "tobe up": {
        "mind",
        "face",
        "hand._hand",
        "awareness",
        "sqlalchemy",
        "jsonschema",
        "grpc",
        "grpc_health",
        "google.protobuf",
    },
    "mind": {"face", "hand", "awareness", "jsonschema"},
    "face": {"mind", "hand", "awareness", "sqlalchemy"},
    "hand": {"mind", "face", "awareness", "sqlalchemy", "jsonschema"},
    "awareness": {"mind", "face", "hand", "sqlalchemy"},
    "starter": {"mind", "face", "hand", "awareness", "sqlalchemy", "jsonschema"},
}
_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", re.MULTILINE)


def modules(report: str) -> set[str]:
    """The modules an import-time report names."""
    return set(_IMPORTED.findall(report))


def loaded(imported: set[str], names: set[str]) -> set[str]:
    """The modules of `imported` that are one of `names` or inside one of them."""
    return {m for m in imported if any(m == n or m.startswith(f"{n}.") for n in names)}


def start_and_stop(env: dict[str, str], stderr_path: Path, *options: str) -> None:
    """`tobe up` until its banner, then stopped as Ctrl-C stops it."""
    with stderr_path.open("w") as stderr:
        up = subprocess.Popen(
            [sys.executable, "-m", "tobe", "up", "--port-base", "0", *options],
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        try:
            assert up.stdout is not None
            for line in up.stdout:
                if "ToBe is up." in line:
                    break
            else:
                pytest.fail(f"tobe up ended before its banner: {stderr_path.read_text()[-2000:]}")
        finally:
            up.send_signal(signal.SIGINT)
            up.communicate(timeout=START_TIMEOUT)


@pytest.fixture(scope="module")
def restart_imports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, set[str]]]:
    """Process name -> the modules it imported, on the second start of one data directory."""
    root = tmp_path_factory.mktemp("idle")
    env = {**up_env(root / "data", listen=False), "PYTHONPROFILEIMPORTTIME": "1"}
    start_and_stop(env, root / "first.stderr")
    start_and_stop(env, root / "restart.stderr")
    imported = {"tobe up": modules((root / "restart.stderr").read_text()), **held(root / "data")}
    yield imported


def held(data_dir: Path) -> dict[str, set[str]]:
    """Service name (and "starter") -> the modules it holds since the last start."""
    logs = data_dir / "logs"
    preloaded = since_last_start(logs / "starter.log")
    imported = {log.stem: since_last_start(log) | preloaded for log in logs.glob("*.log")}
    imported["starter"] = preloaded
    return imported


def since_last_start(log: Path) -> set[str]:
    return modules(log.read_text().rsplit(START_MARKER, 1)[-1])


@pytest.mark.parametrize("process", sorted(NOT_ITS_OWN))
def test_an_idle_process_loads_no_library_its_configuration_does_not_use(
    restart_imports: dict[str, set[str]], process: str
) -> None:
    imported = restart_imports[process]
    assert "tobe.config" in imported  # the report was read
    assert loaded(imported, UNUSED | NOT_ITS_OWN[process]) == set()


def test_a_face_without_its_web_client_loads_no_web_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("no-web")
    env = {**up_env(root / "data", listen=False), "PYTHONPROFILEIMPORTTIME": "1"}
    start_and_stop(env, root / "up.stderr", "--no-web")
    imported = held(root / "data")["face"]
    assert "grpc" in imported  # the report was read
    assert loaded(imported, {"starlette", "uvicorn", "websockets", "face.web.app"}) == set()
