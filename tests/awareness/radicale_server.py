"""A real Radicale CalDAV server for the calendar adapter's tests.

Each server gets a temp directory with its config, its storage and an htpasswd users file in
plain text, and a free loopback port it keeps across `stop`/`start`. `client()` is a caldav
client of its own, so tests check the server's state independently of the adapter.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import caldav
import httpx
from helpers.eventually import eventually
from helpers.ports import free_port

USERNAME = "owner"
PASSWORD = "radicale-password-3d9f1a"


@dataclass
class Radicale:
    root: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> None:
        config = self.root / "config"
        config.write_text(
            "[server]\n"
            f"hosts = 127.0.0.1:{self.port}\n"
            "[auth]\n"
            "type = htpasswd\n"
            f"htpasswd_filename = {self.root / 'users'}\n"
            "htpasswd_encryption = plain\n"
            # No delay after a failed login: a test of a wrong password waits for nothing.
            "delay = 0\n"
            "[storage]\n"
            f"filesystem_folder = {self.root / 'storage'}\n"
            "[logging]\n"
            "level = warning\n"
        )
        (self.root / "users").write_text(f"{USERNAME}:{PASSWORD}\n")
        with open(self.root / "radicale.log", "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "radicale", "--config", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        eventually(self._serving, what="radicale answering HTTP", context=self.log)

    def _serving(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"radicale exited early:\n{self.log()}")
        try:
            httpx.get(self.url, timeout=1)
        except httpx.TransportError:
            return False
        return True

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def log(self) -> str:
        path = self.root / "radicale.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def client(self) -> Any:
        """A caldav client of the test's own (close it)."""
        return caldav.DAVClient(url=self.url, username=USERNAME, password=PASSWORD)


@contextmanager
def running_radicale() -> Iterator[Radicale]:
    server = Radicale(Path(tempfile.mkdtemp(prefix="radicale-")), free_port())
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
