"""What `tobe up` holds idle and how long it takes to be ready: each process's RSS and PSS and
each service's import time, against a bare gRPC health server measured in the same run.

    PYTHONPATH=. python bench/bench_footprint.py --runs 3 --idle 3

Each run starts `tobe up` twice as `bench_up` does (the offline demo provider, free ports): a
first start in a fresh temporary data directory, which creates the store and the credentials,
then a restart on that directory, as a box restarts every day. Each waits for the banner
"ToBe is up.", lets it idle `--idle` seconds, then reads `/proc/PID/smaps_rollup` of every
process in its tree: the supervisor itself and each service (a service's own children, if
any, count towards it). RSS counts every page a process maps; PSS shares each page among the
processes mapping it, so the tree's PSS is what the tree really holds. Then it stops ToBe as
Ctrl-C does.

Python's bytecode is cached in a temporary PYTHONPYCACHEPREFIX, filled by one pair of starts
before the measured ones, as an installed ToBe has it; the source trees are left untouched.

One more pair of starts runs with `PYTHONPROFILEIMPORTTIME=1` (inherited by the services,
whose stderr goes to their logs): each process's import time is the sum of the self times it
reports, so it counts every module the process imported up to the idle point, at start or
later.

The baseline, run alternately with it: one bare Python process serving only the gRPC health
service (`bench_up.bare_server`), its RSS and PSS once it answers and its time to answer.

Targets: the tree at most 200 MiB, the Mind at most 60 MiB (both judged on RSS, PSS shown
beside), ready within 1.0 s of the spawn.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench_up import bare_server, fresh_env, spawn_up, stop_up, wait_for_banner

MIB = 1024 * 1024
TREE_TARGET_MIB = 200
MIND_TARGET_MIB = 60
READY_TARGET_S = 1.0
SUPERVISOR = "tobe up"
STARTER = "starter"
STARTER_MODULE = "tobe.runtime.service_starter"
ORDER = (SUPERVISOR, STARTER, "awareness", "mind", "face", "hand")
_IMPORT_LINE = re.compile(rb"^import time:\s+(\d+) \|")


def memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in bytes, from its smaps_rollup."""
    values = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Pss"):
            values[key] = int(rest.split()[0]) * 1024
    return values["Rss"], values["Pss"]


def children() -> dict[int, list[int]]:
    """Parent pid -> its children's pids, for every process visible now."""
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree[parent].append(int(entry))
    return tree


def descendants(pid: int, tree: dict[int, list[int]]) -> list[int]:
    found = []
    for child in tree.get(pid, []):
        found += [child, *descendants(child, tree)]
    return found


def service_name(pid: int) -> str:
    """The service a `tobe <service> serve` process runs, or "starter" for the process that
    forks them (a forked service's command line is its process title, one string)."""
    words = Path(f"/proc/{pid}/cmdline").read_bytes().decode().replace("\0", " ").split()
    if words[1:3] == ["-m", STARTER_MODULE]:
        return STARTER
    return words[3] if words[1:3] == ["-m", "tobe"] else words[0]


def tree_memory(supervisor: int) -> dict[str, tuple[int, int]]:
    """(RSS, PSS) of the supervisor, of the starter, and of each service with its own
    children."""
    tree = children()
    measured = {SUPERVISOR: memory(supervisor)}
    services = []
    for child in tree.get(supervisor, []):
        if service_name(child) == STARTER:
            measured[STARTER] = memory(child)
            services += tree.get(child, [])
        else:
            services.append(child)
    for service in services:
        parts = [memory(pid) for pid in (service, *descendants(service, tree))]
        measured[service_name(service)] = (sum(p[0] for p in parts), sum(p[1] for p in parts))
    return measured


def import_seconds(stderr_text: bytes) -> float:
    """The import time a `-X importtime` report adds up to: the sum of its self times."""
    total = 0
    for line in stderr_text.splitlines():
        match = _IMPORT_LINE.match(line)
        if match:
            total += int(match.group(1))
    return total / 1e6


Measured = tuple[float, dict[str, tuple[int, int]]]


def cached_env(temporary: Path, bytecode: Path) -> tuple[dict[str, str], Path]:
    """`bench_up.fresh_env` with bytecode cached under `bytecode`, as an installed ToBe has it
    (an environment with PYTHONDONTWRITEBYTECODE set compiles every module at every start)."""
    env, data_dir = fresh_env(temporary)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return env, data_dir


def one_run(idle: float, bytecode: Path) -> tuple[Measured, Measured]:
    """A first start in a fresh data directory, then a restart on it: for each, seconds to the
    banner and each process's (RSS, PSS) after idling `idle` seconds."""
    with tempfile.TemporaryDirectory() as temporary:
        env, _ = cached_env(Path(temporary), bytecode)
        return measured_start(env, idle), measured_start(env, idle)


def measured_start(env: dict[str, str], idle: float) -> Measured:
    start = time.monotonic()
    process = spawn_up(env)
    try:
        ready = wait_for_banner(process, start)["banner"]
        time.sleep(idle)
        return ready, tree_memory(process.pid)
    finally:
        stop_up(process)


def import_times(idle: float, bytecode: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Each process's import time in a first start and a restart profiled with
    PYTHONPROFILEIMPORTTIME."""
    with tempfile.TemporaryDirectory() as temporary:
        env, data_dir = cached_env(Path(temporary), bytecode)
        env["PYTHONPROFILEIMPORTTIME"] = "1"
        return (
            profiled_start(env, data_dir, idle, Path(temporary) / "first.stderr"),
            profiled_start(env, data_dir, idle, Path(temporary) / "restart.stderr"),
        )


def profiled_start(
    env: dict[str, str], data_dir: Path, idle: float, stderr_path: Path
) -> dict[str, float]:
    logs = data_dir / "logs"
    offsets = {log.stem: log.stat().st_size for log in logs.glob("*.log")}
    with stderr_path.open("w") as stderr:
        process = spawn_up(env, stderr=stderr)
        try:
            wait_for_banner(process, time.monotonic())
            time.sleep(idle)
        finally:
            stop_up(process)
    times = {SUPERVISOR: import_seconds(stderr_path.read_bytes())}
    for log in logs.glob("*.log"):
        with log.open("rb") as handle:
            handle.seek(offsets.get(log.stem, 0))
            times[log.stem] = import_seconds(handle.read())
    return times


def bare_run() -> tuple[float, tuple[int, int]]:
    with bare_server() as (process, seconds):
        return seconds, memory(process.pid)


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "NOT met"


def report(
    label: str,
    runs: list[Measured],
    bare: list[tuple[float, tuple[int, int]]],
    imports: dict[str, float],
) -> None:
    names = sorted(
        {n for _, m in runs for n in m},
        key=lambda n: (n not in ORDER, ORDER.index(n) if n in ORDER else 0, n),
    )

    def median_mib(name: str, index: int) -> float:
        return statistics.median(m[name][index] for _, m in runs if name in m) / MIB

    print(f"tobe up idle after {label}, median of {len(runs)}:")
    print(f"  {'process':<10} {'RSS MiB':>8} {'PSS MiB':>8} {'import s':>9}")
    for name in names:
        imported = f"{imports[name]:9.3f}" if name in imports else f"{'-':>9}"
        print(f"  {name:<10} {median_mib(name, 0):8.1f} {median_mib(name, 1):8.1f} {imported}")
    tree_rss = statistics.median(sum(v[0] for v in m.values()) for _, m in runs) / MIB
    tree_pss = statistics.median(sum(v[1] for v in m.values()) for _, m in runs) / MIB
    print(f"  {'total':<10} {tree_rss:8.1f} {tree_pss:8.1f} {sum(imports.values()):9.3f}")
    ready = statistics.median(r for r, _ in runs)
    floor = statistics.median(seconds for seconds, _ in bare)
    bare_rss = statistics.median(m[0] for _, m in bare) / MIB
    bare_pss = statistics.median(m[1] for _, m in bare) / MIB
    print(f"  ready (banner) {ready:.2f} s")
    print(
        f"baseline: one bare gRPC health server: RSS {bare_rss:.1f} MiB, PSS {bare_pss:.1f} MiB,"
        f" ready in {floor:.2f} s (median)"
    )
    print(
        f"ratios: tree RSS / baseline {tree_rss / bare_rss:.1f}x,"
        f" Mind RSS / baseline {median_mib('mind', 0) / bare_rss:.1f}x,"
        f" ready / baseline {ready / floor:.1f}x"
    )
    mind_rss, mind_pss = median_mib("mind", 0), median_mib("mind", 1)
    print("targets:")
    print(
        f"  tree <= {TREE_TARGET_MIB} MiB: RSS {tree_rss:.1f} {verdict(tree_rss, TREE_TARGET_MIB)}"
        f" (PSS {tree_pss:.1f} {verdict(tree_pss, TREE_TARGET_MIB)})"
    )
    print(
        f"  Mind <= {MIND_TARGET_MIB} MiB: RSS {mind_rss:.1f} {verdict(mind_rss, MIND_TARGET_MIB)}"
        f" (PSS {mind_pss:.1f} {verdict(mind_pss, MIND_TARGET_MIB)})"
    )
    print(f"  ready <= {READY_TARGET_S:.1f} s: {ready:.2f} {verdict(ready, READY_TARGET_S)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle", type=float, default=3.0, help="seconds idle before measuring")
    options = parser.parse_args()
    firsts, restarts, bare = [], [], []
    with tempfile.TemporaryDirectory() as bytecode:
        one_run(0, Path(bytecode))  # fills the bytecode cache
        for _ in range(options.runs):
            bare.append(bare_run())
            first, restart = one_run(options.idle, Path(bytecode))
            firsts.append(first)
            restarts.append(restart)
        first_imports, restart_imports = import_times(options.idle, Path(bytecode))
    report("a first start (fresh data directory)", firsts, bare, first_imports)
    report("a restart (the same data directory)", restarts, bare, restart_imports)


if __name__ == "__main__":
    main()
