"""Whether a service `tobe up` started is ready, asked without a gRPC client of its own.

Each service answers its health status in one plain line at its probe address
(`tobe.runtime.probe_answer`; `ServicePlan.probe`, a socket file in the data directory unless
one is configured), the same status its gRPC health service reports, with the reason it is not
serving. It is ready once it answers SERVING and has published, from its own process, its
address and each other service it serves in runtime.json (`tobe.runtime.addresses`), where
the next wave learns where to dial it. So the supervising process never loads grpc.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from management.up_plan import ServicePlan
from tobe.runtime.addresses import published
from tobe.runtime.probe_answer import read_answer

SERVING = "SERVING"
# Longest one probe waits for its answer.
PROBE_TIMEOUT = 1.0


@dataclass(frozen=True)
class Ready:
    """Where a ready service serves: its own address ("" for one that publishes none, the
    Hand) and the other services' it publishes (Face: its web client)."""

    address: str
    also_at: dict[str, str] = field(default_factory=dict)


def readiness(plan: ServicePlan, pid: int, data_dir: Path) -> Ready | str:
    """Ready when the service of `plan`, running as `pid`, is; else what it answers meanwhile
    ("NOT_SERVING (why)", "UNREACHABLE (why)", or that it has not published yet)."""
    answer = read_answer(plan.probe, PROBE_TIMEOUT)
    if answer != SERVING:
        return answer
    entries = published(data_dir)
    names = ((plan.name,) if plan.publishes else ()) + plan.also_publishes
    waiting = [name for name in names if name not in entries or entries[name].pid != pid]
    if waiting:
        return f"SERVING, but has not published {', '.join(waiting)} in runtime.json yet"
    return Ready(
        entries[plan.name].address if plan.publishes else "",
        {name: entries[name].address for name in plan.also_publishes},
    )
