"""A real Synapse homeserver for the Matrix transport's tests: a subprocess on a free loopback port.

Synapse runs from its own virtualenv (`<repo>/.synapse-venv`, made by
`scripts/install_synapse.sh`, which this module runs when the venv is missing), on SQLite in a
temp directory, without federation, with every rate limit raised so tests never wait on one.
Users are registered through the admin API with the shared secret (HMAC, no admin user needed).
`restart` stops it and starts it again on the same data directory and port, so clients keep
their access tokens and devices across it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from helpers.eventually import eventually
from helpers.ports import free_port

REPO = Path(__file__).resolve().parents[2]
SYNAPSE_VENV = REPO / ".synapse-venv"
INSTALL_SCRIPT = REPO / "scripts" / "install_synapse.sh"
SERVER_NAME = "localhost"
START_TIMEOUT = 120.0

# Every limit a test could reach, raised far beyond what a test does.
_UNLIMITED = {"per_second": 10_000, "burst_count": 10_000}
_RATE_LIMITS: dict[str, Any] = {
    "rc_message": _UNLIMITED,
    "rc_registration": _UNLIMITED,
    "rc_registration_token_validity": _UNLIMITED,
    "rc_login": {"address": _UNLIMITED, "account": _UNLIMITED, "failed_attempts": _UNLIMITED},
    "rc_admin_redaction": _UNLIMITED,
    "rc_joins": {"local": _UNLIMITED, "remote": _UNLIMITED},
    "rc_joins_per_room": _UNLIMITED,
    "rc_invites": {"per_room": _UNLIMITED, "per_user": _UNLIMITED, "per_issuer": _UNLIMITED},
    "rc_3pid_validation": _UNLIMITED,
    "rc_presence": {"per_user": _UNLIMITED},
    "rc_room_creation": _UNLIMITED,
    "rc_media_create": _UNLIMITED,
}


def ensure_installed() -> Path:
    """The Synapse venv's Python, installing the pinned Synapse first when it is missing."""
    python = SYNAPSE_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run(["bash", str(INSTALL_SCRIPT)], check=True)
    return python


class Synapse:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = root / "homeserver.yaml"
        self.log = root / "synapse.log"
        self.registration_secret = secrets.token_hex(16)
        self.process: subprocess.Popen[bytes] | None = None
        # Seconds the last `start` took until the client API answered.
        self.start_seconds = 0.0
        self._python = ensure_installed()
        self._write_config()
        subprocess.run(
            [str(self._python), "-m", "synapse.app.homeserver", "-c", str(self.config)]
            + ["--generate-keys"],
            check=True,
            capture_output=True,
            cwd=root,
        )

    def _write_config(self) -> None:
        config: dict[str, Any] = {
            "server_name": SERVER_NAME,
            "pid_file": str(self.root / "homeserver.pid"),
            "listeners": [
                {
                    "port": self.port,
                    "bind_addresses": ["127.0.0.1"],
                    "type": "http",
                    "tls": False,
                    "x_forwarded": False,
                    "resources": [{"names": ["client"], "compress": False}],
                }
            ],
            "database": {"name": "sqlite3", "args": {"database": str(self.root / "homeserver.db")}},
            "media_store_path": str(self.root / "media"),
            "signing_key_path": str(self.root / "signing.key"),
            "registration_shared_secret": self.registration_secret,
            "macaroon_secret_key": secrets.token_hex(16),
            "form_secret": secrets.token_hex(16),
            "report_stats": False,
            "trusted_key_servers": [],
            "suppress_key_server_warning": True,
            "federation_domain_whitelist": [],
            "enable_metrics": False,
            "presence": {"enabled": False},
            **_RATE_LIMITS,
        }
        # JSON is YAML: no YAML writer needed in the test environment.
        self.config.write_text(json.dumps(config, indent=2))

    def start(self) -> None:
        began = time.monotonic()
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(self._python), "-m", "synapse.app.homeserver", "-c", str(self.config)],
                stdout=log,
                stderr=log,
                cwd=self.root,
            )
        eventually(
            self._answering,
            timeout=START_TIMEOUT,
            what="Synapse answering /_matrix/client/versions",
            context=self.output,
            interval=0.1,
        )
        self.start_seconds = time.monotonic() - began

    def stop(self) -> None:
        """Stop it cleanly (SIGTERM, as an init system would)."""
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        """Stop, then start on the same data directory and port."""
        self.stop()
        self.start()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-20_000:]

    def register(self, localpart: str, password: str, *, admin: bool = False) -> str:
        """Create a user through the shared-secret admin API; returns its full user id."""
        endpoint = f"{self.url}/_synapse/admin/v1/register"
        nonce = self._request("GET", endpoint)["nonce"]
        mac = hmac.new(self.registration_secret.encode(), digestmod=hashlib.sha1)
        for part in (nonce, localpart, password):
            mac.update(part.encode() + b"\x00")
        mac.update(b"admin" if admin else b"notadmin")
        body = {
            "nonce": nonce,
            "username": localpart,
            "password": password,
            "admin": admin,
            "mac": mac.hexdigest(),
        }
        user_id: str = self._request("POST", endpoint, body)["user_id"]
        return user_id

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def _answering(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"Synapse exited early:\n{self.output()}")
        try:
            self._request("GET", f"{self.url}/_matrix/client/versions")
        except (urllib.error.URLError, OSError):
            return False
        return True


@contextmanager
def running_synapse() -> Iterator[Synapse]:
    root = Path(tempfile.mkdtemp(prefix="synapse-"))
    server: Synapse | None = None
    try:
        server = Synapse(root)
        server.start()
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
