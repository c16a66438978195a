"""How far the watched mailbox has been handled, and where watching resumes.

The durable position (UIDVALIDITY, next UID not yet handled) moves only when the bridge has
handled every mail up to it, in order: a mail yielded but not handled is fetched again after
a restart. Within one run, the watch's reconnections resume after the last mail fetched, so a
dropped connection fetches nothing twice. A mailbox seen for the first time, or renumbered by
the server (a new UIDVALIDITY), starts at the server's UIDNEXT: mail already there is not news.

The watch thread calls `resume` and `advance`; everything else, and every use of the state,
happens on the event loop (`in_loop` hands the thread's writes over to it, in order).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from face.channels.transport import TransportState

log = logging.getLogger(__name__)
KEY = "position"


@dataclass
class _Pending:
    uid: int
    item_id: str
    done: bool


@dataclass(frozen=True)
class _Position:
    mailbox: str
    uidvalidity: int
    next_uid: int


class MailboxCursor:
    def __init__(
        self,
        state: TransportState,
        mailbox: str,
        in_loop: Callable[[Callable[[], None]], None],
    ) -> None:
        self._state = state
        self._mailbox = mailbox
        self._in_loop = in_loop
        self._saved = _load(state)
        self._lock = threading.Lock()
        self._fetched: tuple[int, int] | None = None  # (uidvalidity, next uid) in this run
        self._uidvalidity = 0
        self._pending: list[_Pending] = []

    # -- the watch's `Positions` (watch thread) ---------------------------------------------

    def resume(self, mailbox: str, uidvalidity: int, uidnext: int) -> int:
        with self._lock:
            if self._fetched is not None and self._fetched[0] == uidvalidity:
                return self._fetched[1]
            saved = self._saved
            if saved is not None and (saved.mailbox, saved.uidvalidity) == (mailbox, uidvalidity):
                next_uid = saved.next_uid
            else:
                if saved is not None:
                    log.warning(
                        "mailbox %s is not the one last watched or was renumbered "
                        "(UIDVALIDITY %s -> %s): answering only new mail",
                        mailbox,
                        saved.uidvalidity,
                        uidvalidity,
                    )
                next_uid = uidnext
                self._save(_Position(mailbox, uidvalidity, next_uid))
            self._uidvalidity = uidvalidity
            self._fetched = (uidvalidity, next_uid)
            return next_uid

    def advance(self, mailbox: str, uidvalidity: int, next_uid: int) -> None:
        with self._lock:
            self._fetched = (uidvalidity, next_uid)

    # -- the bridge's acknowledgements (event loop) -----------------------------------------

    def fetched(self, uid: int, item_id: str, *, done: bool) -> None:
        """Mail `uid` was taken from the mailbox: yielded (`done` later) or skipped (`done`)."""
        with self._lock:
            self._pending.append(_Pending(uid, item_id, done))
            self._move()

    def handled(self, item_id: str) -> None:
        with self._lock:
            for pending in self._pending:
                if pending.item_id == item_id and not pending.done:
                    pending.done = True
                    break
            self._move()

    def _move(self) -> None:
        last = None
        while self._pending and self._pending[0].done:
            last = self._pending.pop(0)
        if last is not None:
            self._save(_Position(self._mailbox, self._uidvalidity, last.uid + 1))

    def _save(self, position: _Position) -> None:
        self._saved = position
        document = {
            "mailbox": position.mailbox,
            "uidvalidity": position.uidvalidity,
            "next_uid": position.next_uid,
        }
        self._in_loop(lambda: self._state.put(KEY, json.dumps(document)))


def _load(state: TransportState) -> _Position | None:
    value = state.get(KEY)
    if value is None:
        return None
    document = json.loads(value)
    return _Position(document["mailbox"], int(document["uidvalidity"]), int(document["next_uid"]))
