"""The keys one Mind process knows, by run: live ones, and what replaced a shredded run.

Every reader of sealed values asks the ring for the key of the run an envelope names. The ring
learns a key when this process creates it (`add`, after its unit committed) and forgets it when
the run's finish unit deleted it (`shred`); a run it has not seen (one sealed before a restart)
is read from the store once, on the reader's thread, and kept. Only sealed runs get here, so
the ring grows with them, not with the traffic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

REMOVED = "[sensitive data removed after the turn]"


@dataclass(frozen=True)
class Queried:
    """One dataset a sealed turn queried, and how that call ended."""

    dataset: str
    status: str

    def to_json(self) -> dict[str, str]:
        return {"dataset": self.dataset, "status": self.status}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Queried:
        return cls(str(data.get("dataset", "")), str(data.get("status", "")))


def replacement(redaction: Iterable[Queried]) -> str:
    """What stands for a shredded turn's tool results: which datasets, with what status."""
    named = ", ".join(f"{q.dataset} ({q.status})" for q in redaction)
    return f"[sensitive data removed after the turn: {named}]" if named else REMOVED


@dataclass(frozen=True)
class SealState:
    """A sealed run as readers see it: its key while it exists, else its redaction."""

    key: bytes | None
    redaction: tuple[Queried, ...] = ()


Loader = Callable[[str], SealState]


class KeyRing:
    def __init__(self, load: Loader | None = None) -> None:
        # Without a loader, a run the ring was not told about reads as shredded.
        self._load = load
        self._states: dict[str, SealState] = {}
        self._lock = threading.Lock()

    def add(self, run_id: str, key: bytes) -> None:
        """A sealed run's key, committed."""
        with self._lock:
            self._states[run_id] = SealState(key)

    def shred(self, run_id: str, redaction: Iterable[Queried]) -> None:
        """The run's key is deleted; `redaction` stands for what it sealed."""
        with self._lock:
            self._states[run_id] = SealState(None, tuple(redaction))

    def state(self, run_id: str) -> SealState:
        with self._lock:
            found = self._states.get(run_id)
        if found is not None:
            return found
        loaded = self._load(run_id) if self._load is not None else SealState(None)
        with self._lock:
            # A key added or shredded meanwhile by this process is newer than what was read.
            return self._states.setdefault(run_id, loaded)

    def held(self, run_id: str) -> bytes | None:
        """The key of a run this process sealed and still holds; None for any other run
        (never read from the store: asked for runs that may not be sealed at all)."""
        with self._lock:
            found = self._states.get(run_id)
        return found.key if found is not None else None

    def key(self, run_id: str) -> bytes | None:
        return self.state(run_id).key

    def replacement(self, run_id: str) -> str:
        return replacement(self.state(run_id).redaction)
