"""What telemetry costs a turn: Mind turns per second with telemetry off and on, side by side.

Off is the default (nothing set); on exports every span and metric over OTLP/gRPC to a
receiver served by this script (the collector's TraceService and MetricsService), with the
SDK's batch processor at its default delay. The two Minds run one after the other, `--rounds`
times each, interleaved, so that drift of the machine touches both alike; the figure is the
ratio of the medians. With nothing set a span or an instrument is one `None` check: the
cost of those checks per turn is measured directly too, as a share of a turn's time.

Reproduce (from the repository root):

    python bench/bench_telemetry.py --seconds 5 --rounds 3 --concurrency 8
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mind_turns import SCRIPT, turn_rate
from helpers import otlp_receiver
from helpers.mind_process import running_mind

from tobe import telemetry
from tobe.telemetry import instruments

# Span and instrument sites one turn of SCRIPT passes (2 model requests, 1 tool call, ~8
# writes): counted generously.
SITES_PER_TURN = 40


def rate(tmp: Path, seconds: float, concurrency: int, **env: str) -> float:
    script = tmp / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp, script=script, clients=(), **env) as mind:
        return asyncio.run(turn_rate(mind.address, mind.gateway_token, seconds, concurrency))


def off_site_cost(count: int = 200_000) -> float:
    """Seconds one span site and one instrument record cost with telemetry off."""
    started = time.perf_counter()
    for _ in range(count):
        with telemetry.span("turn") as span:
            span.set_attribute("a", 1)
        instruments.turns_started.add(1)
    return (time.perf_counter() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    receiver_gen = otlp_receiver.serving()
    receiver = next(receiver_gen)
    on_env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
        "OTEL_METRIC_EXPORT_INTERVAL": "1000",
    }
    off: list[float] = []
    on: list[float] = []
    try:
        for round_ in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                off.append(rate(Path(tmp), args.seconds, args.concurrency))
            with tempfile.TemporaryDirectory() as tmp:
                on.append(rate(Path(tmp), args.seconds, args.concurrency, **on_env))
            print(f"round {round_ + 1}: off {off[-1]:8.1f}/s  on {on[-1]:8.1f}/s", flush=True)
    finally:
        receiver_gen.close()
    spans = len(receiver.received.spans())
    off_median, on_median = statistics.median(off), statistics.median(on)
    site = off_site_cost()
    # The machine's whole CPU time per turn (every core busy): the smallest a turn can cost,
    # so the share below is an upper bound.
    turn_seconds = (os.cpu_count() or 1) / off_median
    print(f"concurrency              {args.concurrency}")
    print(f"turns/s telemetry off    {off_median:10.1f}  (median of {args.rounds})")
    print(f"turns/s telemetry on     {on_median:10.1f}  (OTLP/gRPC to a local receiver)")
    print(f"ratio on/off             {on_median / off_median:10.3f}")
    print(f"spans received           {spans:10d}")
    print(f"off: one site costs      {site * 1e9:10.0f} ns")
    share = SITES_PER_TURN * site / turn_seconds
    print(f"off: {SITES_PER_TURN} sites / turn  {share * 100:10.4f} % of a turn's CPU time")


if __name__ == "__main__":
    main()
