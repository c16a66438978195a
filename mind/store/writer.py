"""What the store's two writers (`group_writer`, `pool_writer`) share: the callback that
receives committed events, and the counters they keep."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mind.store.models import OutboxEvent

OnCommit = Callable[[list[OutboxEvent]], None]


@dataclass
class StoreStats:
    """Counters for benchmarks and status: units committed, the commits that held them, and
    reads (read transactions and single-statement reads)."""

    units: int = 0
    commits: int = 0
    reads: int = 0
