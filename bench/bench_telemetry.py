"""What telemetry costs a turn: Mind turns per second with no telemetry, off and on, side by side.

Three Minds, one arm each. Bare: the telemetry facade replaced by bare no-ops in that Mind's
process only (`bare_telemetry/sitecustomize.py` on its PYTHONPATH), as if no site recorded
anything. Off: the shipped facade with nothing set (the default). On: every span and metric
exported over OTLP/gRPC to a receiver served by this script (the collector's TraceService and
MetricsService), with the SDK's batch processor at its default delay. The arms run one after
the other, `--rounds` times each, interleaved, so that drift of the machine touches all alike;
the figures are ratios of the medians, off/bare being what "nothing set" costs (the target is
at most 3 %). The cost of one site, shipped off and bare, is measured directly too, as a share
of a turn's time.

Reproduce (from the repository root):

    python bench/bench_telemetry.py --seconds 5 --rounds 3 --concurrency 8
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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

BARE = Path(__file__).resolve().parent / "bare_telemetry"
BARE_MARK = "telemetry: bare no-ops"

# Span and instrument sites one turn of SCRIPT passes (2 model requests, 1 tool call, ~8
# writes): counted generously.
SITES_PER_TURN = 40


def rate(tmp: Path, seconds: float, concurrency: int, **env: str) -> float:
    script = tmp / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp, script=script, clients=(), **env) as mind:
        turns = asyncio.run(turn_rate(mind.address, mind.gateway_token, seconds, concurrency))
        patched = any(BARE_MARK in line for line in mind.output)
        if patched != ("PYTHONPATH" in env):
            raise SystemExit(f"the Mind's facade is not the arm's (bare patch loaded: {patched})")
        return turns


def bare_env() -> dict[str, str]:
    """The bare arm's environment: the patch first on the Mind's PYTHONPATH."""
    path = [str(BARE), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in path if p)}


def site_cost(count: int = 200_000) -> float:
    """Seconds one span site and one instrument record cost with the facade as it is now."""
    started = time.perf_counter()
    for _ in range(count):
        with telemetry.span("turn") as span:
            span.set_attribute("a", 1)
        instruments.turns_started.add(1)
    return (time.perf_counter() - started) / count


def bare_site_cost() -> float:
    """`site_cost` with the bare no-ops patched in (here, then restored)."""
    saved = telemetry.span, instruments.Instrument.add
    null = contextlib.nullcontext(telemetry.NO_SPAN)
    telemetry.span = lambda *args, **kwargs: null  # type: ignore[assignment]
    instruments.Instrument.add = lambda *args, **kwargs: None  # type: ignore[method-assign]
    try:
        return site_cost()
    finally:
        telemetry.span, instruments.Instrument.add = saved  # type: ignore[method-assign]


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
    bare: list[float] = []
    off: list[float] = []
    on: list[float] = []
    try:
        for round_ in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                bare.append(rate(Path(tmp), args.seconds, args.concurrency, **bare_env()))
            with tempfile.TemporaryDirectory() as tmp:
                off.append(rate(Path(tmp), args.seconds, args.concurrency))
            with tempfile.TemporaryDirectory() as tmp:
                on.append(rate(Path(tmp), args.seconds, args.concurrency, **on_env))
            print(
                f"round {round_ + 1}: bare {bare[-1]:8.1f}/s  off {off[-1]:8.1f}/s"
                f"  on {on[-1]:8.1f}/s",
                flush=True,
            )
    finally:
        receiver_gen.close()
    spans = len(receiver.received.spans())
    bare_median = statistics.median(bare)
    off_median, on_median = statistics.median(off), statistics.median(on)
    site, bare_site = site_cost(), bare_site_cost()
    # The machine's whole CPU time per turn (every core busy): the smallest a turn can cost,
    # so the share below is an upper bound.
    turn_seconds = (os.cpu_count() or 1) / off_median
    print(f"concurrency              {args.concurrency}")
    print(f"turns/s bare no-ops      {bare_median:10.1f}  (median of {args.rounds})")
    print(f"turns/s telemetry off    {off_median:10.1f}  (nothing set: the shipped facade)")
    print(f"turns/s telemetry on     {on_median:10.1f}  (OTLP/gRPC to a local receiver)")
    print(f"ratio off/bare           {off_median / bare_median:10.3f}  (target: >= 0.970)")
    print(f"ratio on/off             {on_median / off_median:10.3f}")
    print(f"spans received           {spans:10d}")
    print(f"off: one site costs      {site * 1e9:10.0f} ns")
    print(f"bare: one site costs     {bare_site * 1e9:10.0f} ns")
    share = SITES_PER_TURN * (site - bare_site) / turn_seconds
    print(f"off-bare: {SITES_PER_TURN} sites/turn {share * 100:10.4f} % of a turn's CPU time")


if __name__ == "__main__":
    main()
