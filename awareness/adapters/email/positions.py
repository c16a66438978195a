"""How far each watched mailbox has been observed, kept in `data/positions.json`.

A mailbox's position is its UIDVALIDITY and the next UID not yet observed: IMAP promises that
UIDs only grow while UIDVALIDITY stays the same, so (UIDVALIDITY, UID) names a message once.
A mailbox seen for the first time, or whose UIDVALIDITY changed (the server renumbered it),
starts at the server's current UIDNEXT: mail already there is not news.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from awareness.adapter import AdapterContext

FILE = "positions.json"
log = logging.getLogger(__name__)


class Positions:
    """Shared by the mailbox watchers' threads."""

    def __init__(self, context: AdapterContext) -> None:
        self._context = context
        self._lock = threading.Lock()

    def resume(self, mailbox: str, uidvalidity: int, uidnext: int) -> int:
        """The next UID to observe in `mailbox`, starting at `uidnext` when it is new to us."""
        with self._lock:
            document = self._load()
            entry = document.get(mailbox)
            if entry is not None and entry["uidvalidity"] == uidvalidity:
                return int(entry["next_uid"])
            if entry is not None:
                log.warning(
                    "mailbox %s was renumbered (UIDVALIDITY %s -> %s): observing only new mail",
                    mailbox,
                    entry["uidvalidity"],
                    uidvalidity,
                )
            document[mailbox] = {"uidvalidity": uidvalidity, "next_uid": uidnext}
            self._context.save_json(FILE, document)
            return uidnext

    def advance(self, mailbox: str, uidvalidity: int, next_uid: int) -> None:
        with self._lock:
            document = self._load()
            document[mailbox] = {"uidvalidity": uidvalidity, "next_uid": next_uid}
            self._context.save_json(FILE, document)

    def _load(self) -> dict[str, Any]:
        document = self._context.load_json(FILE)
        return document if isinstance(document, dict) else {}
