"""The mutation lease: at most one mutation (a run, later a compaction) per conversation."""

from __future__ import annotations


class MutationLease:
    """A non-blocking, named lease. Holders release it when their mutation ends.

    Non-blocking on purpose: the actor never waits for the lease while it holds its own
    state lock; a message that finds the lease taken is queued and drained on release.
    """

    def __init__(self) -> None:
        self.holder: str | None = None

    def try_acquire(self, holder: str) -> bool:
        if self.holder is not None:
            return False
        self.holder = holder
        return True

    def release(self, holder: str) -> None:
        if self.holder != holder:
            raise RuntimeError(f"lease held by {self.holder!r}, not {holder!r}")
        self.holder = None

    @property
    def held(self) -> bool:
        return self.holder is not None
