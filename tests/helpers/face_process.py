"""A real `tobe face serve` process in front of a `MindProcess`, for end-to-end tests.

    with running_mind(tmp_path, script=SCRIPT) as mind, running_face(mind) as face:
        client = await FaceClient.connect(face.address, mind.client_tokens["alice"])

`face.web_address` is where it serves the web client (`web=False`: none). `start` returns once
Face's health is SERVING (its feed from the Mind is live), unless told `serving=False` (a Face
started while its Mind is away, or with a refused credential); `health()` answers
(status, reason) as `tobe health` sees them.
`FaceProcess.restart()` comes back on the same ports once the new process is ready;
`rss_kib()` reads the process's resident memory from /proc; `output` holds everything it
printed (its log included).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from helpers.eventually import eventually, eventually_async
from helpers.mind_events import events_until_async, replay_async
from helpers.mind_process import MindProcess, issue_token
from tobe.runtime.addresses import published
from tobe.runtime.health_reason import reason_of
from tobe.v1 import common_pb2, events_pb2, mind_pb2, mind_pb2_grpc

READY_PREFIX = "face listening on "
WEB_READY_PREFIX = "face web listening on "
START_TIMEOUT = 30.0


@dataclass
class FaceProcess:
    env: dict[str, str]
    mind_address: str
    address: str = ""
    # Further Minds (on the same database) the Face fails over to, after `mind_address`.
    more_minds: tuple[str, ...] = ()
    # Where the web client is served ("" with `web=False`).
    web_address: str = ""
    web: bool = True
    process: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)

    def start(
        self, listen: str = "127.0.0.1:0", web_listen: str = "127.0.0.1:0", *, serving: bool = True
    ) -> None:
        """Start Face and return once it printed its ready lines (web first, then gRPC) and,
        when `serving`, once its health says SERVING."""
        web = ["--web-listen", web_listen] if self.web else ["--no-web"]
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tobe",
                "face",
                "serve",
                "--listen",
                listen,
                "--mind",
                self.mind_address,
                *[option for mind in self.more_minds for option in ("--mind", mind)],
                *web,
            ],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.process = process
        # One event per process: the reader of a killed process must not wake up a restart.
        ready = threading.Event()
        started: list[str] = []
        threading.Thread(target=self._read, args=(process, ready, started), daemon=True).start()
        if not ready.wait(START_TIMEOUT) or not started or process.poll() is not None:
            self.kill()
            raise RuntimeError("Face did not start:\n" + "\n".join(self.output[-40:]))
        if serving:
            eventually(
                lambda: self.health()[0],
                START_TIMEOUT,
                until=lambda status: status == "SERVING",
                what="Face's health to say SERVING",
                context=lambda: "\n".join(self.output[-40:]),
            )

    def health(self) -> tuple[str, str]:
        """(status, reason) of Face's gRPC health check, as `tobe health --target` reads it;
        over TLS trusting the CA it published when it serves TLS."""
        entry = published(Path(self.env["TOBE_DATA_DIR"])).get("face")
        if entry is not None and entry.ca_file:
            trust = grpc.ssl_channel_credentials(Path(entry.ca_file).read_bytes())
            channel = grpc.secure_channel(self.address, trust)
        else:
            channel = grpc.insecure_channel(self.address)
        with channel:
            call = health_pb2_grpc.HealthStub(channel).Check
            answer, outcome = call.with_call(health_pb2.HealthCheckRequest(), timeout=5)
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
        return status, reason_of(outcome.trailing_metadata())

    def _read(
        self, process: subprocess.Popen[str], ready: threading.Event, started: list[str]
    ) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip("\n")
            self.output.append(line)
            if line.startswith(WEB_READY_PREFIX):
                self.web_address = line.removeprefix(WEB_READY_PREFIX).strip()
            elif line.startswith(READY_PREFIX):
                self.address = line.removeprefix(READY_PREFIX).strip()
                started.append(self.address)
                ready.set()
        ready.set()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def terminate(self, timeout: float = 30.0) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def restart(self, *, serving: bool = True) -> None:
        """Kill (-9) and start again on the same addresses; returns once the new Face is ready."""
        self.kill()
        self.start(self.address, self.web_address or "127.0.0.1:0", serving=serving)

    def rss_kib(self) -> int:
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
        return int(line.split()[1])

    def log_lines(self, needle: str) -> list[str]:
        return [line for line in list(self.output) if needle in line]


def face_env(mind: MindProcess, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(
        TOBE_CONFIG=str(mind.data_dir / "absent-config.toml"),
        TOBE_DATA_DIR=str(mind.data_dir / "face"),
        TOBE_LOG_LEVEL="INFO",
        TOBE_FACE__MIND_TOKEN=mind.gateway_token,
    )
    env.update({f"TOBE_FACE__{key.upper()}": value for key, value in settings.items()})
    return env


@contextmanager
def running_face(
    mind: MindProcess, *, web: bool = True, serving: bool = True, **settings: str
) -> Iterator[FaceProcess]:
    """Face in front of `mind`, with the web client on a port of its own unless `web` is
    False; `settings` are [face] values, e.g. queue_size="64". Returns once it is SERVING,
    unless `serving` is False (see `FaceProcess.start`)."""
    face = FaceProcess(face_env(mind, **settings), mind.address, web=web)
    try:
        face.start(serving=serving)
        yield face
    finally:
        face.kill()


def admin_token(mind: MindProcess) -> str:
    return issue_token(mind.url, kind="client", principal="root", scopes=["chat", "admin"])


class MindDirect:
    """The Mind called directly with the gateway credential: to produce events fast and to
    read the ground truth of what a principal should have seen."""

    def __init__(self, mind: MindProcess) -> None:
        self.mind = mind
        self.channel = grpc.aio.insecure_channel(mind.address)
        self.stub = mind_pb2_grpc.MindStub(self.channel)

    async def close(self) -> None:
        await self.channel.close()

    async def create(self, key: str, principal: str = "alice", title: str = "") -> None:
        await self.stub.CreateConversation(
            mind_pb2.CreateConversationRequest(
                on_behalf_of=mind_pb2.OnBehalfOf(principal=principal, scopes=["chat"]),
                key=key,
                title=title,
            ),
            metadata=self.mind.gateway_metadata,
            timeout=30,
        )

    async def send(self, key: str, text: str, principal: str = "alice") -> str:
        response = await self.stub.SendChat(
            mind_pb2.SendChatRequest(
                on_behalf_of=mind_pb2.OnBehalfOf(principal=principal, scopes=["chat"]),
                conversation_key=key,
                text=text,
                idempotency_key=f"{key}-{text}",
            ),
            metadata=self.mind.gateway_metadata,
            timeout=30,
        )
        return response.run_id

    async def wait_run_end(self, key: str) -> None:
        """Follow the Mind's own event stream until a run of `key` ends."""

        def ended(events: list[events_pb2.Event]) -> bool:
            event = events[-1]
            return (
                event.conversation_key == key
                and event.HasField("run_changed")
                and event.run_changed.state not in (0, common_pb2.RUN_STATE_RUNNING)
            )

        await events_until_async(
            self.stub, self.mind.gateway_metadata, ended, what=f"a run of {key} to end"
        )

    async def durable_events(self, principal: str, after_id: int = 0) -> list[events_pb2.Event]:
        """Every durable event `principal` may see, from the Mind's own replay."""
        events, _ = await replay_async(self.stub, self.mind.gateway_metadata, after_id)
        return [event for event in events if principal in event.audience]


async def wait_for_line(
    face: FaceProcess, needle: str, timeout: float = 60.0, occurrences: int = 1
) -> None:
    """Wait until Face has printed `occurrences` lines containing `needle`."""
    await eventually_async(
        lambda: face.log_lines(needle),
        timeout,
        until=lambda lines: len(lines) >= occurrences,
        what=f"{occurrences} Face log line(s) containing {needle!r}",
    )
