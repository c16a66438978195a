"""A real Mosquitto broker for the MQTT adapter's tests: a subprocess on a free loopback port.

Each broker gets its own config file in a temp directory (no persistence, never the system
service). With `users`, anonymous access is off and the passwords are hashed into a password
file by `mosquitto_passwd`. `stop` and `start` again keep the port, so a client configured
with it can reconnect.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers.eventually import eventually
from helpers.ports import free_port

MOSQUITTO = Path("/usr/sbin/mosquitto")
MOSQUITTO_PASSWD = Path("/usr/bin/mosquitto_passwd")


class Mosquitto:
    def __init__(self, root: Path, users: dict[str, str]) -> None:
        self.root = root
        self.port = free_port()
        self.config = root / "mosquitto.conf"
        self.log = root / "mosquitto.log"
        self.process: subprocess.Popen[bytes] | None = None
        lines = [f"listener {self.port} 127.0.0.1", "persistence false"]
        if os.geteuid() == 0:
            # As root, Mosquitto would switch to its own user, which cannot read this directory.
            lines.append("user root")
        if users:
            passwords = root / "passwords"
            for name, password in users.items():
                create = ["-c"] if not passwords.exists() else []
                subprocess.run(
                    [str(MOSQUITTO_PASSWD), *create, "-b", str(passwords), name, password],
                    check=True,
                    capture_output=True,
                )
            lines += ["allow_anonymous false", f"password_file {passwords}"]
        else:
            lines.append("allow_anonymous true")
        self.config.write_text("\n".join(lines) + "\n")

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(MOSQUITTO), "-c", str(self.config)], stdout=log, stderr=log
            )
        eventually(self._accepting, what="mosquitto accepting connections", context=self.output)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        self.process.wait(timeout=30)
        self.process = None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def _accepting(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"mosquitto exited early:\n{self.output()}")
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", self.port)) == 0


@contextmanager
def running_mosquitto(users: dict[str, str] | None = None) -> Iterator[Mosquitto]:
    root = Path(tempfile.mkdtemp(prefix="mqtt-"))
    broker = Mosquitto(root, users or {})
    try:
        broker.start()
        yield broker
    finally:
        if broker.process is not None:
            broker.process.kill()
            broker.process.wait()
        shutil.rmtree(root, ignore_errors=True)
