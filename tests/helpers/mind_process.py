"""A real `tobe mind serve` process on a loopback port, for end-to-end tests.

Before starting the Mind, the store is migrated and the credentials the test needs are issued
directly against it. `MindProcess` can be killed (-9), stopped (SIGTERM) and restarted on the
same data directory; `running_mind` always kills it at the end.

    with running_mind(tmp_path, script=SCRIPT) as mind:
        stub = mind_stub(mind)
        stub.SendChat(..., metadata=mind.gateway_metadata)
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from helpers import store_backend
from mind.credentials import issue
from mind.store.database import Database
from mind.store.write_tx import WriteTx

READY_PREFIX = "mind listening on "
START_TIMEOUT = 30.0


def store_url(data_dir: Path) -> str:
    """The store of the Mind on `data_dir`: its SQLite file, or under `--store-backend=postgresql`
    a PostgreSQL database of its own (helpers/store_backend.py)."""
    return store_backend.database_url(data_dir)


def issue_token(url: str, *, kind: str, principal: str, scopes: list[str]) -> str:
    """Issue a credential straight into the store; returns its token."""

    def unit(tx: WriteTx) -> str:
        _row, token = issue(tx.session, kind=kind, principal=principal, scopes=scopes)
        return token

    async def _issue() -> str:
        database = Database.open(url)
        try:
            return await database.write(unit)
        finally:
            await database.close()

    return asyncio.run(_issue())


@dataclass
class MindProcess:
    data_dir: Path
    env: dict[str, str]
    gateway_token: str
    client_tokens: dict[str, str]
    address: str = ""
    process: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)

    @property
    def gateway_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.gateway_token}"),)

    @property
    def url(self) -> str:
        return store_url(self.data_dir)

    def start(self, listen: str = "127.0.0.1:0") -> None:
        """Start the Mind and wait for its `mind listening on` line."""
        ready = threading.Event()
        self.address = ""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tobe", "mind", "serve", "--listen", listen],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, args=(self.process, ready), daemon=True).start()
        if not ready.wait(START_TIMEOUT) or not self.address:
            self.kill()
            raise RuntimeError("the Mind did not start:\n" + "\n".join(self.output[-40:]))

    def _read(self, process: subprocess.Popen[str], ready: threading.Event) -> None:
        """Collect one process's output; `ready` is set on its ready line or at its end."""
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip("\n")
            self.output.append(line)
            if line.startswith(READY_PREFIX):
                self.address = line.removeprefix(READY_PREFIX).strip()
                ready.set()
        ready.set()

    def kill(self) -> None:
        """SIGKILL: the crash case."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def restart(self, *, same_address: bool = False) -> None:
        """Kill (-9) and start again; `same_address` keeps the port (for clients like Face)."""
        self.kill()
        self.start(self.address if same_address else "127.0.0.1:0")


def run_mind_command(
    env: dict[str, str], timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run `tobe mind serve` expecting it to exit on its own (e.g. a refused start)."""
    return subprocess.run(
        [sys.executable, "-m", "tobe", "mind", "serve", "--listen", "127.0.0.1:0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def mind_env(data_dir: Path, script: Path | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(
        TOBE_CONFIG=str(data_dir / "absent-config.toml"),
        TOBE_DATA_DIR=str(data_dir),
        TOBE_LOG_LEVEL="INFO",
        TOBE_MIND__LOCK_TIMEOUT="20",
        # Tests of other features run without the entry decision layer; tests/actions turn
        # it on (`TOBE_ACTIONS__ENABLED="true"`).
        TOBE_ACTIONS__ENABLED="false",
        **store_backend.environment(data_dir),
    )
    if script is not None:
        env.update(TOBE_PROVIDER__KIND="scripted", TOBE_PROVIDER__SCRIPT=str(script))
    env.update(extra)
    return env


@contextmanager
def running_mind(
    tmp_path: Path,
    *,
    script: Path | None,
    clients: tuple[str, ...] = ("alice", "bob"),
    **extra_env: str,
) -> Iterator[MindProcess]:
    """A migrated store with a gateway and client credentials, and a started Mind on it."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    url = store_url(data_dir)
    store_backend.migrate(url)
    gateway = issue_token(url, kind="service", principal="face", scopes=["gateway"])
    tokens = {
        name: issue_token(url, kind="client", principal=name, scopes=["chat"]) for name in clients
    }
    mind = MindProcess(data_dir, mind_env(data_dir, script, **extra_env), gateway, tokens)
    try:
        mind.start()
        yield mind
    finally:
        mind.kill()
