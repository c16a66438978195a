"""What the store's two writers share: the contract the database drives them by, the callback
that receives committed events, and the counters they keep."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from mind.store.models import OutboxEvent
from mind.store.write_tx import Unit

T = TypeVar("T")

OnCommit = Callable[[list[OutboxEvent]], None]


class Writer(Protocol):
    async def write(self, unit: Unit[T]) -> T: ...

    async def close(self) -> None: ...


@dataclass
class StoreStats:
    """Counters for benchmarks and status: units committed, the commits that held them, and
    reads (read transactions and single-statement reads)."""

    units: int = 0
    commits: int = 0
    reads: int = 0
