"""Fan-out throughput of the Face gateway against raw gRPC server-streaming, in one run.

For 1, 10 and 100 subscribed clients it measures durable events per second delivered to all
clients (events x clients / elapsed) by

* Face: a FaceGateway server built from Face's own parts (servicer, shared feed, per-connection
  queues, detail-mode rendering, seq numbering) in a child process, with clients authenticated
  by a real `tobe mind serve`; the upstream Mind stream is replaced by an injector that hands
  synthetic events to `EventFeed.dispatch` as fast as the slowest queue drains, so the Mind's
  own event rate does not limit the measurement;
* raw gRPC: a server-streaming method in a child process writing the same pre-serialized frame
  to every client with no queueing, filtering or numbering: the floor of what gRPC costs.

Clients live in this process (one asyncio loop) in both cases, and print the ratio
Face / raw for each client count.

Reproduce (from the repository root):

    python bench/bench_face_fanout.py            # 1, 10, 100 clients
    python bench/bench_face_fanout.py --events 5000 --clients 1 --clients 10
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from tobe.runtime.channel import bearer_metadata
from tobe.v1 import common_pb2, events_pb2, face_pb2, face_pb2_grpc

PRINCIPAL_ENV = "TOBE_BENCH_PRINCIPAL"
RAW_METHOD = "/bench.Raw/Stream"
FIRST_ID = 1_000_000
TEXT = "x" * 200
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 16 * 1024 * 1024)]


def sample_event(durable_id: int, principal: str) -> events_pb2.Event:
    return events_pb2.Event(
        durable_id=durable_id,
        conversation_key="p_bench",
        audience=[principal],
        message_appended=common_pb2.Message(
            id=durable_id,
            conversation_key="p_bench",
            role=common_pb2.MESSAGE_ROLE_ASSISTANT,
            text=TEXT,
        ),
    )


# -- child processes ------------------------------------------------------------------------------


def _commands() -> asyncio.Queue[str]:
    """Lines of stdin as an asyncio queue (the parent's go signals)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str] = asyncio.Queue()

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line.strip())

    threading.Thread(target=read, daemon=True).start()
    return queue


async def face_child(mind_address: str, token_file: str) -> None:
    from face.connection import Phase
    from face.feed import EventFeed
    from face.mind_client import MindClient
    from face.projection import AdmissionModes
    from face.servicer import SERVICE_NAME, FaceGatewayServicer
    from tobe.config import FaceSettings
    from tobe.runtime.server import ServiceSpec, start_server

    settings = FaceSettings(listen="127.0.0.1:0", write_timeout=60.0)
    mind = MindClient(mind_address, Path(token_file).read_text().strip())
    feed = EventFeed(mind, AdmissionModes())  # no feed.run(): the injector below replaces it
    servicer = FaceGatewayServicer(mind, feed, settings)
    server = await start_server([ServiceSpec(SERVICE_NAME, servicer.register)], ["127.0.0.1:0"])
    print(f"port {server.bound['127.0.0.1:0']}", flush=True)
    principal = os.environ[PRINCIPAL_ENV]
    commands = _commands()
    next_id = FIRST_ID
    half = settings.queue_size // 2
    while True:
        _, clients, events = (await commands.get()).split()
        # Start once this round's clients are all live and the previous round's, which their
        # clients cancelled, are gone: the pacing below waits on every connection's queue.
        while len(feed.connections) != int(clients) or any(
            c.phase is not Phase.LIVE for c in feed.connections
        ):
            await asyncio.sleep(0.01)
        for n in range(int(events)):
            next_id += 1
            feed.dispatch(sample_event(next_id, principal))
            if n % 32 == 0:
                while max(len(c.queue) for c in feed.connections) > half:
                    await asyncio.sleep(0.0005)
        # The injected ids are not the Mind's: forget them, or the next round's subscriptions
        # would wait for their replay from the real Mind to reach them.
        feed.last_id = 0


@dataclass
class RawRound:
    """One round of the raw server: its start signal and how many frames each client gets."""

    start: asyncio.Event = field(default_factory=asyncio.Event)
    events: int = 0


async def raw_child() -> None:
    from tobe.runtime.server import ServiceSpec, start_server

    principal = os.environ[PRINCIPAL_ENV]
    frame = face_pb2.ConnectResponse(event=sample_event(1, principal)).SerializeToString()
    current = RawRound()

    async def stream(_request: bytes, context: grpc.aio.ServicerContext) -> None:
        # Taken before "subscribed" is written: the parent may read it and start the round
        # before this handler resumes from the write.
        this_round = current
        await context.write(b"")  # "subscribed"
        await this_round.start.wait()
        for _ in range(this_round.events):
            await context.write(frame)

    handler = grpc.unary_stream_rpc_method_handler(stream)
    generic = grpc.method_handlers_generic_handler("bench.Raw", {"Stream": handler})

    def register(server: grpc.aio.Server) -> None:
        server.add_generic_rpc_handlers((generic,))

    server = await start_server([ServiceSpec("bench.Raw", register)], ["127.0.0.1:0"])
    print(f"port {server.bound['127.0.0.1:0']}", flush=True)
    commands = _commands()
    while True:
        _, clients, events = (await commands.get()).split()
        current.events = int(events)
        current.start.set()
        current = RawRound()


# -- clients (this process) -----------------------------------------------------------------------


class Child:
    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, *args],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()
        if not line.startswith("port "):
            raise RuntimeError(f"child {args} did not start")
        self.address = f"127.0.0.1:{line.split()[1]}"

    def go(self, clients: int, events: int) -> None:
        self.process.stdin.write(f"go {clients} {events}\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


async def face_round(face: Child, token: str, clients: int, events: int) -> float:
    channels = [
        grpc.aio.insecure_channel(face.address, options=CHANNEL_OPTIONS) for _ in range(clients)
    ]
    calls = []
    for channel in channels:
        call = face_pb2_grpc.FaceGatewayStub(channel).Connect(metadata=bearer_metadata(token))
        await call.write(face_pb2.ConnectRequest(request_id="h", hello=face_pb2.Hello()))
        await call.write(
            face_pb2.ConnectRequest(request_id="s", subscribe=face_pb2.SubscribeCommand(after_id=0))
        )
        calls.append(call)
    for call in calls:
        while not (await call.read()).HasField("replay_done"):
            pass

    async def consume(call: grpc.aio.StreamStreamCall) -> None:
        received = 0
        while received < events:
            frame = await call.read()
            if frame.HasField("event"):
                received += 1

    started = time.perf_counter()
    face.go(clients, events)
    await asyncio.gather(*(consume(call) for call in calls))
    elapsed = time.perf_counter() - started
    for call in calls:
        call.cancel()
    for channel in channels:
        await channel.close()
    return elapsed


async def raw_round(raw: Child, clients: int, events: int) -> float:
    channels = [
        grpc.aio.insecure_channel(raw.address, options=CHANNEL_OPTIONS) for _ in range(clients)
    ]
    calls = [channel.unary_stream(RAW_METHOD)(b"") for channel in channels]
    for call in calls:
        await call.read()

    async def consume(call) -> None:
        for _ in range(events):
            face_pb2.ConnectResponse.FromString(await call.read())

    started = time.perf_counter()
    raw.go(clients, events)
    await asyncio.gather(*(consume(call) for call in calls))
    elapsed = time.perf_counter() - started
    for channel in channels:
        await channel.close()
    return elapsed


def start_mind(data_dir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    from mind.management.local_credentials import provision
    from tobe.config import Settings

    provision(Settings(data_dir=data_dir, database_url=""))
    process = subprocess.Popen(
        [sys.executable, "-m", "tobe", "mind", "serve", "--listen", "127.0.0.1:0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    for line in process.stdout:
        if line.startswith("mind listening on "):
            return process, line.removeprefix("mind listening on ").strip()
    raise RuntimeError("the Mind did not start")


async def measure(counts: list[int], events: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
        env.update(
            TOBE_DATA_DIR=str(data_dir),
            TOBE_CONFIG=str(data_dir / "none.toml"),
            TOBE_LOG_LEVEL="WARNING",
        )
        mind, mind_address = await asyncio.to_thread(start_mind, data_dir, env)
        token = (data_dir / "credentials" / "client.token").read_text().strip()
        from mind.management.local_credentials import local_credentials

        env[PRINCIPAL_ENV] = local_credentials()[-1].principal
        face = Child(
            ["--role", "face", mind_address, str(data_dir / "credentials" / "face.token")], env
        )
        raw = Child(["--role", "raw"], env)
        try:
            # Warm both servers up (connections, code paths) before measuring.
            await raw_round(raw, 2, 200)
            await face_round(face, token, 2, 200)
            print(f"{events} events of {len(TEXT)} text bytes per client")
            print(f"{'clients':>7} {'raw ev/s':>12} {'face ev/s':>12} {'face/raw':>9}")
            for clients in counts:
                raw_elapsed = await raw_round(raw, clients, events)
                face_elapsed = await face_round(face, token, clients, events)
                raw_rate = clients * events / raw_elapsed
                face_rate = clients * events / face_elapsed
                print(
                    f"{clients:>7} {raw_rate:>12,.0f} {face_rate:>12,.0f} "
                    f"{face_rate / raw_rate:>9.2f}",
                    flush=True,
                )
        finally:
            face.stop()
            raw.stop()
            mind.kill()
            mind.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=["face", "raw"])
    parser.add_argument("--clients", type=int, action="append")
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("child_args", nargs="*")
    args = parser.parse_args()
    if args.role == "face":
        asyncio.run(face_child(*args.child_args))
    elif args.role == "raw":
        asyncio.run(raw_child())
    else:
        asyncio.run(measure(args.clients or [1, 10, 100], args.events))


if __name__ == "__main__":
    main()
