"""Time from `tobe up` to ready, by phase: the median of N cold starts in fresh data directories.

    PYTHONPATH=. python bench/bench_up.py --runs 5

Each run starts `python -m tobe up --port-base N` (N+10, N+20 and N+30 free, as the default
7400 is on a machine without ToBe; with port 0 the Mind would wait to learn Awareness' port) in
a new temporary data directory (the offline demo provider, no config file) and records,
relative to the spawn: when `tobe up` printed each service's start line, when each service
published its address in `runtime.json` (it does so once bound and serving), and when the
banner "ToBe is up." came. Then it stops ToBe with SIGINT and waits for it to exit. The Hand
publishes nothing: its readiness is the banner's.

The baseline, run alternately with it: one bare Python process serving only the gRPC health
service, from spawn to its first SERVING answer — the floor any one service's start has on
this machine. The ratio says how many such starts `tobe up` costs (four services, two waves).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from subprocess import Popen
from typing import IO

PROVIDER_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
SERVICES = ("awareness", "mind", "face")


def one_run() -> dict[str, float]:
    """Seconds from spawn to each phase of one cold start."""
    with tempfile.TemporaryDirectory() as temporary:
        env, data_dir = fresh_env(Path(temporary))
        phases: dict[str, float] = {}
        start = time.monotonic()
        process = spawn_up(env)
        done = threading.Event()
        watcher = threading.Thread(target=_watch_published, args=(data_dir, start, phases, done))
        watcher.start()
        try:
            phases.update(wait_for_banner(process, start))
        finally:
            done.set()
            watcher.join()
            stop_up(process)
        return phases


def fresh_env(temporary: Path) -> tuple[dict[str, str], Path]:
    """This environment without ToBe's settings or provider keys (so the offline demo plays),
    with a new data directory under `temporary` and no config file; and that data directory."""
    data_dir = temporary / "data"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOBE_") and k not in PROVIDER_VARIABLES
    }
    env.update(TOBE_DATA_DIR=str(data_dir), TOBE_CONFIG=str(temporary / "absent.toml"))
    return env, data_dir


def spawn_up(env: dict[str, str], stderr: int | IO[str] = subprocess.STDOUT) -> Popen[str]:
    """`tobe up` on free ports, its output readable line by line."""
    return subprocess.Popen(
        [sys.executable, "-m", "tobe", "up", "--port-base", str(free_port_base())],
        env=env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def wait_for_banner(process: Popen[str], start: float) -> dict[str, float]:
    """Seconds from `start` to each service's start line and to the banner "ToBe is up."."""
    phases: dict[str, float] = {}
    assert process.stdout is not None
    for line in process.stdout:
        now = time.monotonic() - start
        spawned = re.match(r"\s+(\w+)\s+pid \d+", line)
        if spawned:
            phases[f"{spawned.group(1)} spawned"] = now
        if "ToBe is up." in line:
            phases["banner"] = now
            return phases
        if line.startswith("Error"):
            raise SystemExit(f"tobe up failed: {line.strip()}")
    raise SystemExit("tobe up ended before its banner")


def stop_up(process: Popen[str]) -> None:
    """Stop `tobe up` as Ctrl-C does and wait for it to exit."""
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)


def free_port_base() -> int:
    """A port base whose four service ports (the web client's included) are free right now."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1]) - 30
        if base > 1024 and all(_free(base + offset) for offset in (10, 20, 21, 30)):
            return base


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


BARE_SERVER = """
import asyncio, grpc
from grpc_health.v1 import health, health_pb2_grpc
async def main():
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    print(server.add_insecure_port("127.0.0.1:0"), flush=True)
    await server.start()
    await server.wait_for_termination()
asyncio.run(main())
"""


def bare_grpc_server() -> float:
    """Seconds from spawn to the first SERVING answer of a server with only gRPC health."""
    with bare_server() as (_, seconds):
        return seconds


@contextlib.contextmanager
def bare_server() -> Iterator[tuple[Popen[str], float]]:
    """A running bare gRPC health server and the seconds from its spawn to its first SERVING
    answer; stopped on exit."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    start = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", BARE_SERVER], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            request = health_pb2.HealthCheckRequest()
            stub.Check(request, wait_for_ready=True, timeout=60)  # type: ignore[attr-defined]
        yield process, time.monotonic() - start
    finally:
        process.terminate()
        process.wait()


def _watch_published(
    data_dir: Path, start: float, phases: dict[str, float], done: threading.Event
) -> None:
    while not done.wait(0.01):
        try:
            services = json.loads((data_dir / "runtime.json").read_text())["services"]
        except (OSError, ValueError, KeyError):
            continue
        for name in services:
            phases.setdefault(f"{name} serving", time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    results, floors = [], []
    for _ in range(runs):
        floors.append(bare_grpc_server())
        results.append(one_run())
    names = sorted(
        {name for result in results for name in result},
        key=lambda name: statistics.median(r[name] for r in results if name in r),
    )
    print(f"tobe up, median of {runs} cold starts (seconds after spawn):")
    for name in names:
        values = [result[name] for result in results if name in result]
        print(f"  {name:<20} {statistics.median(values):6.2f}   (min {min(values):.2f})")
    floor = statistics.median(floors)
    ready = statistics.median(result["banner"] for result in results)
    print(f"baseline: one bare gRPC health server ready in {floor:.2f} s (median)")
    print(f"tobe up ready / baseline: {ready / floor:.1f}x")


if __name__ == "__main__":
    main()
