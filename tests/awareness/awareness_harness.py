"""Helpers for Awareness tests: a real `tobe awareness serve` process and a client.

The process listens on a Unix socket and scans a test adapters directory.

The process gets a temp data directory, a copy of the `probe` test adapter (and, per test,
copies of built-in adapters), a known service token, and short aggregation windows. Its
stderr is captured to a file so tests can assert what it logged.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from helpers.eventually import eventually

from tobe.v1 import awareness_pb2 as pb
from tobe.v1 import awareness_pb2_grpc as pb_grpc

HERE = Path(__file__).resolve().parent
PROBE = HERE / "adapters" / "probe"
BUILTIN = HERE.parents[1] / "awareness" / "adapters"
# The console script installed beside the interpreter running the tests.
TOBE = Path(sys.executable).parent / "tobe"
TOKEN = "test-service-token-5f2a9c"
LOW_WINDOW = 1.5
MEDIUM_WINDOW = 1.0
START_TIMEOUT = 20.0


@dataclass
class AwarenessProcess:
    root: Path
    adapters_dir: Path
    data_dir: Path
    socket: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    # How to run `tobe awareness serve` (another interpreter, another user…).
    command: list[str] = field(default_factory=lambda: [str(TOBE), "awareness", "serve"])
    process: subprocess.Popen[bytes] | None = None
    stderr_path: Path | None = None
    starts: int = 0

    @property
    def target(self) -> str:
        return f"unix:{self.socket}"

    def instance_dir(self, name: str) -> Path:
        """Where the process keeps adapter `name`'s config.json and data/."""
        return self.data_dir / "awareness" / "adapters" / name

    def write_config(self, name: str, config: dict[str, Any]) -> Path:
        """Write adapter `name`'s instance config.json (read at its next registration)."""
        path = self.instance_dir(name) / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config))
        return path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
        env.update(
            TOBE_CONFIG=str(self.root / "absent.toml"),
            TOBE_DATA_DIR=str(self.data_dir),
            TOBE_AWARENESS__LISTEN=self.target,
            TOBE_AWARENESS__ADAPTERS_DIR=str(self.adapters_dir),
            TOBE_AWARENESS__BUILTIN_ADAPTERS="false",
            TOBE_AWARENESS__TOKEN=TOKEN,
            TOBE_AWARENESS__LOW_WINDOW=str(LOW_WINDOW),
            TOBE_AWARENESS__MEDIUM_WINDOW=str(MEDIUM_WINDOW),
        )
        env.update(self.extra_env)
        return env

    def start(self) -> None:
        """Spawn the process and wait until its health check says SERVING."""
        self.starts += 1
        self.stderr_path = self.root / f"stderr-{self.starts}.log"
        with open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(self.command, env=self.env(), stderr=err, cwd=self.root)
        eventually(
            self._ready,
            START_TIMEOUT,
            what="awareness serving its health check",
            context=self.stderr,
        )

    def _ready(self) -> bool:
        """Whether the process serves; an exit fails at once, with what it printed."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"awareness exited early:\n{self.stderr()}")
        return self.socket.exists() and self._serving()

    def _serving(self) -> bool:
        with grpc.insecure_channel(self.target) as channel:
            try:
                reply = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=1
                )
            except grpc.RpcError:
                return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path else ""

    def all_stderr(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.root.glob("stderr-*")))

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Signal the process and wait for it; returns its exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=30)
        self.process = None
        return code


def add_adapter(adapters_dir: Path, source: Path, name: str | None = None) -> Path:
    target = adapters_dir / (name or source.name)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("config.json", "data"))
    return target


@contextmanager
def new_process() -> Iterator[AwarenessProcess]:
    # Short root: Unix socket paths are limited to ~100 bytes.
    root = Path(tempfile.mkdtemp(prefix="aw-"))
    adapters = root / "adapters"
    adapters.mkdir()
    add_adapter(adapters, PROBE)
    proc = AwarenessProcess(root, adapters, root / "data", root / "a.sock")
    try:
        yield proc
    finally:
        if proc.process is not None:
            proc.process.kill()
            proc.process.wait()
        shutil.rmtree(root, ignore_errors=True)


class Client:
    """A thin async client of the Awareness contract with the service token."""

    def __init__(self, target: str, token: str = TOKEN) -> None:
        self.channel = grpc.aio.insecure_channel(target)
        self.stub = pb_grpc.AwarenessStub(self.channel)
        self.metadata = (("authorization", f"Bearer {token}"),)

    async def close(self) -> None:
        await self.channel.close()

    async def adapters(self) -> list[pb.AdapterInfo]:
        reply = await self.stub.ListAdapters(pb.ListAdaptersRequest(), metadata=self.metadata)
        return list(reply.adapters)

    async def adapter_id(self, name: str) -> str:
        ids = [a.adapter_id for a in await self.adapters() if a.name == name]
        assert len(ids) == 1, ids
        return ids[0]

    async def observe(self, adapter_id: str, action: str, **args: Any) -> dict[str, Any]:
        reply = await self.stub.Observe(
            pb.ObserveRequest(
                call_id="c1", adapter_id=adapter_id, action=action, args_json=json.dumps(args)
            ),
            metadata=self.metadata,
        )
        return json.loads(reply.result.content_json)

    async def interact(self, adapter_id: str, action: str, **args: Any) -> dict[str, Any]:
        reply = await self.stub.Interact(
            pb.InteractRequest(
                call_id="c2", adapter_id=adapter_id, action=action, args_json=json.dumps(args)
            ),
            metadata=self.metadata,
        )
        return json.loads(reply.result.content_json)

    async def emit(self, adapter_id: str, trust: str, **content: Any) -> str:
        result = await self.interact(adapter_id, "emit", trust=trust, content=content)
        assert result["status"] == "success", result
        return result["result"]["observation_id"]

    async def register(self, name: str) -> pb.ToolCallResult:
        reply = await self.stub.RegisterAdapter(
            pb.RegisterAdapterRequest(call_id="r1", name=name), metadata=self.metadata
        )
        return reply.result

    async def unregister(self, adapter_id: str) -> pb.ToolCallResult:
        reply = await self.stub.UnregisterAdapter(
            pb.UnregisterAdapterRequest(call_id="u1", adapter_id=adapter_id),
            metadata=self.metadata,
        )
        return reply.result

    def subscribe(self, after_seq: int = 0):
        return self.stub.SubscribeObservations(
            pb.SubscribeObservationsRequest(after_seq=after_seq), metadata=self.metadata
        )


async def next_batch(stream, timeout: float = 15.0) -> pb.SubscribeObservationsResponse:
    item = await asyncio.wait_for(stream.read(), timeout)
    assert item is not grpc.aio.EOF, "the observation stream ended"
    return item


async def batch_with(stream, observation_id: str) -> pb.SubscribeObservationsResponse:
    """The first batch holding `observation_id`, skipping other tests' batches."""
    while True:
        batch = await next_batch(stream)
        if any(o.id == observation_id for o in batch.observations):
            return batch
