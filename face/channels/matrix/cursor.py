"""Where the next /sync starts, moved past a batch only once every item of it was handled.

A sync response (a batch) carries a `next_batch` token. The token kept in the state is the one
after the last batch whose items are all handled, so after a restart the homeserver sends every
batch from there again. Items handled beyond that token (a batch handled in part) are kept in
the state too, by event id, so that they are skipped instead of yielded a second time; these are
forgotten once the token moves past their batch. `handled(item)` also covers every item yielded
before it, as the transport contract says.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field

from face.channels.transport import TransportState

SINCE = "matrix.sync.since"
HANDLED = "matrix.sync.handled"


@dataclass
class _Batch:
    token: str
    pending: list[str]
    handled: set[str] = field(default_factory=set)


class SyncCursor:
    def __init__(self, state: TransportState) -> None:
        self._state = state
        # Where the next request starts: past every batch fetched, handled or not.
        self.next_since = state.get(SINCE)
        # Handled ids from before this start, beyond the stored token: skipped when seen again.
        self._earlier: set[str] = set(json.loads(state.get(HANDLED) or "[]"))
        self._batches: deque[_Batch] = deque()
        self._stored_handled = state.get(HANDLED) or "[]"

    @property
    def fresh(self) -> bool:
        """No sync ever finished: the homeserver's history is not ours to answer."""
        return self.next_since is None

    def was_handled(self, item_id: str) -> bool:
        return item_id in self._earlier or any(item_id in b.handled for b in self._batches)

    def fetched(self, token: str, item_ids: list[str]) -> None:
        """A batch ending at `token` yields `item_ids` (in order); the next sync starts there."""
        self.next_since = token
        self._batches.append(_Batch(token, list(item_ids)))
        self._advance()

    def handled(self, item_id: str) -> None:
        """`item_id` and every item yielded before it are done with."""
        for index, batch in enumerate(self._batches):
            if item_id not in batch.pending:
                continue
            for earlier in list(self._batches)[:index]:
                earlier.handled.update(earlier.pending)
                earlier.pending.clear()
            position = batch.pending.index(item_id) + 1
            batch.handled.update(batch.pending[:position])
            del batch.pending[:position]
            self._advance(changed=True)
            return

    def _advance(self, *, changed: bool = False) -> None:
        token = None
        while self._batches and not self._batches[0].pending:
            token = self._batches.popleft().token
        if token is not None:
            self._state.put(SINCE, token)
            self._earlier.clear()
            changed = True
        if changed:
            ids = set(self._earlier).union(*(b.handled for b in self._batches))
            stored = json.dumps(sorted(ids))
            if stored != self._stored_handled:
                self._state.put(HANDLED, stored)
                self._stored_handled = stored
