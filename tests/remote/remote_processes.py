"""Real `tobe hand serve` processes and a small gateway client for the end-to-end tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from helpers.mind_events import events_until
from helpers.mind_process import MindProcess, issue_token

from tobe.v1 import events_pb2, mind_pb2, mind_pb2_grpc

ATTACHED = "attached as "


@dataclass
class HandProcess:
    """The reference Hand as a child process; `attached` counts its welcomes."""

    mind_address: str
    token: str
    workspace: Path
    extra_args: list[str] = field(default_factory=list)
    # A custom Hand program run instead of `tobe hand serve` (gets the Mind address as argv[1]).
    program: Path | None = None
    # Any other Hand program, run as given (e.g. a Hand in another language).
    argv: list[str] | None = None
    # Settings for the Hand beyond the test's own (e.g. TOBE_HAND__BWRAP).
    extra_env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)
    attached: int = 0
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
        env.update(
            TOBE_CONFIG=str(self.workspace.parent / "absent-config.toml"),
            TOBE_DATA_DIR=str(self.workspace.parent / "hand-data"),
            TOBE_HAND_TOKEN=self.token,
            TOBE_LOG_LEVEL="INFO",
        )
        env.update(self.extra_env)
        command = [
            sys.executable,
            "-m",
            "tobe",
            "hand",
            "serve",
            "--mind",
            self.mind_address,
            "--name",
            "laptop",
            "--workspace",
            str(self.workspace),
            *self.extra_args,
        ]
        if self.program is not None:
            command = [sys.executable, str(self.program), self.mind_address]
        if self.argv is not None:
            command = self.argv
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._changed:
                self.output.append(line.rstrip("\n"))
                if ATTACHED in line:
                    self.attached += 1
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_attached(self, count: int = 1, timeout: float = 30) -> None:
        with self._changed:
            ok = self._changed.wait_for(lambda: self.attached >= count, timeout)
        assert ok, "the Hand did not attach:\n" + "\n".join(self.output[-30:])

    def wait_output(self, needle: str, timeout: float = 30) -> None:
        """Wait until the Hand printed a line containing `needle`."""
        with self._changed:
            ok = self._changed.wait_for(
                lambda: any(needle in line for line in self.output), timeout
            )
        assert ok, f"the Hand never printed {needle!r}:\n" + "\n".join(self.output[-30:])

    def wait_exit(self, timeout: float = 30) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@contextlib.contextmanager
def attached_sdk_hand(
    mind: MindProcess, workspace: Path, source: str, name: str = "sdk_hand"
) -> Iterator[HandProcess]:
    """A Hand program written with the SDK (`source`), run with a credential of principal
    `laptop` serving alice, attached to `mind`; killed on the way out."""
    program = workspace.parent / f"{name}.py"
    program.write_text(source)
    token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
    process = HandProcess(mind.address, token, workspace, program=program)
    process.start()
    try:
        process.wait_attached()
        yield process
    finally:
        process.kill()


@dataclass
class Chat:
    """Just enough of the Mind's client API to start turns and read their events."""

    address: str
    metadata: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.address)
        self.stub = mind_pb2_grpc.MindStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    @staticmethod
    def who() -> mind_pb2.OnBehalfOf:
        return mind_pb2.OnBehalfOf(principal="alice", scopes=["chat", "approve"])

    def approve(self, approval_id: str) -> None:
        request = mind_pb2.DecideApprovalRequest(
            on_behalf_of=self.who(),
            approval_id=approval_id,
            decision=1,  # approve once
        )
        self.stub.DecideApproval(request, metadata=self.metadata, timeout=10)

    def create(self, key: str) -> None:
        self.stub.CreateConversation(
            mind_pb2.CreateConversationRequest(on_behalf_of=self.who(), key=key),
            metadata=self.metadata,
            timeout=10,
        )

    def send(self, key: str, text: str, idem: str) -> mind_pb2.SendChatResponse:
        request = mind_pb2.SendChatRequest(
            on_behalf_of=self.who(),
            conversation_key=key,
            text=text,
            idempotency_key=idem,
            detail_mode=2,  # transparent
        )
        return self.stub.SendChat(request, metadata=self.metadata, timeout=15)

    def turn(self, key: str, text: str) -> list[events_pb2.Event]:
        """Create conversation `key`, send `text` to it, and return its events until the run
        ended."""
        self.create(key)
        sent = self.send(key, text, key)
        events = self.events_until(run_ended(sent.run_id))
        return [e for e in events if e.conversation_key == key]

    def events_until(
        self, done: Callable[[list[events_pb2.Event]], bool], *, timeout: float = 60
    ) -> list[events_pb2.Event]:
        """Replay from the start, then live events (ephemeral too), until `done` holds."""
        return events_until(self.stub, self.metadata, done, include_ephemeral=True, timeout=timeout)


def run_ended(run_id: str) -> Callable[[list[events_pb2.Event]], bool]:
    def check(events: list[events_pb2.Event]) -> bool:
        return any(
            e.WhichOneof("payload") == "run_changed"
            and e.run_changed.id == run_id
            and e.run_changed.state >= 2
            for e in events
        )

    return check


def approval_requested(events: list[events_pb2.Event]) -> bool:
    return any(e.WhichOneof("payload") == "approval_changed" for e in events)
